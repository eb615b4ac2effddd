package applied

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestMaybe(t *testing.T) {
	gr := schema.GroupResource{Group: "flotilla.io", Resource: "memberclusters"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, true},
		{"conflict", apierrors.NewConflict(gr, "m1", errors.New("modified")), false},
		{"not found", apierrors.NewNotFound(gr, "m1"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "flotilla.io", Kind: "MemberCluster"}, "m1", field.ErrorList{field.Required(field.NewPath("spec"), "")}), false},
		{"forbidden", apierrors.NewForbidden(gr, "m1", errors.New("protected")), false},
		{"a webhook's denial (400, no reason)", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400,
			Message: `admission webhook "protect.example.com" denied the request`}}, false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"wrapped refusal", fmt.Errorf("update m1: %w", apierrors.NewConflict(gr, "m1", errors.New("modified"))), false},
		{"server timeout", apierrors.NewServerTimeout(gr, "update", 1), true},
		{"timeout", apierrors.NewTimeoutError("timed out", 1), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), true},
		{"service unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"client deadline", fmt.Errorf("update m1: %w", context.DeadlineExceeded), true},
		{"connection reset", errors.New("read tcp: connection reset by peer"), true},
	}
	for _, tt := range tests {
		if got := Maybe(tt.err); got != tt.want {
			t.Errorf("%s: Maybe = %t, want %t", tt.name, got, tt.want)
		}
	}
}
