package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestCheckDeleteOptions(t *testing.T) {
	for _, tc := range []struct {
		name, query, body string
		refused, bad      bool
	}{
		{name: "none"},
		{name: "grace period", query: "gracePeriodSeconds=0", body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`},
		{name: "unsafe in the query", query: "ignoreStoreReadErrorWithClusterBreakingPotential=true", refused: true},
		{name: "unsafe in the body", body: `{"kind":"DeleteOptions","apiVersion":"v1","ignoreStoreReadErrorWithClusterBreakingPotential":true}`, refused: true},
		{name: "unsafe in a meta.k8s.io body", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","ignoreStoreReadErrorWithClusterBreakingPotential":true}`, refused: true},
		{name: "unsafe false", body: `{"ignoreStoreReadErrorWithClusterBreakingPotential":false}`},
		// Go's encoding/json would match the second key to the field and
		// keep its false; the member, case-sensitive, reads true.
		{name: "unsafe beside a capitalised key", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","ignoreStoreReadErrorWithClusterBreakingPotential":true,"IgnoreStoreReadErrorWithClusterBreakingPotential":false}`, refused: true},
		{name: "unsafe given twice", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","ignoreStoreReadErrorWithClusterBreakingPotential":false,"ignoreStoreReadErrorWithClusterBreakingPotential":true}`, bad: true},
		{name: "not options", body: `[1,2`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/ns/pods/web?"+tc.query, strings.NewReader(tc.body))
			if tc.body == "" {
				r.Body = http.NoBody
			}
			err := checkDeleteOptions(r, "web")
			switch {
			case tc.refused && !apierrors.IsForbidden(err):
				t.Fatalf("%v, want 403", err)
			case tc.bad && !apierrors.IsBadRequest(err):
				t.Fatalf("%v, want 400", err)
			case !tc.refused && !tc.bad && err != nil:
				t.Fatal(err)
			}
			if err == nil && tc.body != "" {
				got, _ := io.ReadAll(r.Body)
				if string(got) != tc.body {
					t.Errorf("the member would get %q, want %q", got, tc.body)
				}
			}
		})
	}
}
