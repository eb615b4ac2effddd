package clusterpriority

import (
	"context"
	"testing"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   int64
	}{
		{name: "no labels", want: 0},
		{name: "no priority", labels: map[string]string{"region": "eu"}, want: 0},
		{name: "0", labels: map[string]string{Label: "0"}, want: 0},
		{name: "7", labels: map[string]string{Label: "7"}, want: 7},
		{name: "42", labels: map[string]string{Label: "42"}, want: 42},
		{name: "100", labels: map[string]string{Label: "100"}, want: 100},
		{name: "leading zeros", labels: map[string]string{Label: "050"}, want: 50},
		{name: "above 100", labels: map[string]string{Label: "101"}, want: 0},
		{name: "far above", labels: map[string]string{Label: "1000"}, want: 0},
		{name: "negative", labels: map[string]string{Label: "-5"}, want: 0},
		{name: "signed", labels: map[string]string{Label: "+5"}, want: 0},
		{name: "not a number", labels: map[string]string{Label: "high"}, want: 0},
		{name: "decimal", labels: map[string]string{Label: "9.5"}, want: 0},
		{name: "empty", labels: map[string]string{Label: ""}, want: 0},
	}
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := p.(framework.ScorePlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.MemberCluster{}
			c.Name, c.Labels = "member-1", tt.labels
			got, st := s.Score(context.Background(), framework.CycleState{}, &framework.Unit{Placement: &v1alpha1.Placement{}}, c)
			if !st.IsSuccess() || got != tt.want {
				t.Errorf("Score = %d, %v; want %d", got, st, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New([]byte("{}")); err != nil {
		t.Error(err)
	}
	if _, err := New([]byte(`{"label":"x"}`)); err == nil {
		t.Error("New accepted arguments")
	}
}
