package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	tests := []struct {
		name      string
		succeedAt int // call number that returns nil; 0 never
		timeout   time.Duration
		wantErr   string
		wantCalls int // minimum calls
	}{
		{name: "true at once", succeedAt: 1, timeout: time.Second, wantCalls: 1},
		{name: "true on the third call", succeedAt: 3, timeout: 5 * time.Second, wantCalls: 3},
		{name: "never true reports the last error", succeedAt: 0, timeout: 300 * time.Millisecond, wantErr: "call ", wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Until(context.Background(), tt.timeout, func(context.Context) error {
				calls++
				if calls == tt.succeedAt {
					return nil
				}
				return fmt.Errorf("call %d", calls)
			})
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Until() = %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || err.Error() != fmt.Sprintf("call %d", calls)) {
				t.Fatalf("Until() = %v, want the last error (call %d)", err, calls)
			}
			if calls < tt.wantCalls {
				t.Errorf("%d calls, want at least %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestUntilStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Until(ctx, time.Hour, func(context.Context) error { return errors.New("not yet") })
	if err == nil || err.Error() != "not yet" {
		t.Fatalf("Until() = %v, want the condition's error once the context ends", err)
	}
}

// TestUntilKeepsWhatWasSeen: a condition cut short by the deadline does
// not hide the error of the call before it.
func TestUntilKeepsWhatWasSeen(t *testing.T) {
	calls := 0
	err := Until(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("member-2 not Ready: Unauthorized")
		}
		<-ctx.Done()
		return fmt.Errorf("read member-2: %w", ctx.Err())
	})
	if err == nil || !strings.Contains(err.Error(), "member-2 not Ready: Unauthorized") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Until = %v, want the earlier error and the deadline", err)
	}
}
