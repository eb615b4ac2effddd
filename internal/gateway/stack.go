package gateway

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// stackReserve is about the goroutine stack a request for a host kind ends
// up needing (the filters below authentication, the reverse proxy and the
// exchange with the host), less what is in use when authentication runs:
// with it, the runtime grows the stack once to 32 KiB.
const stackReserve = 24 << 10

// reserveStack wraps the gateway's authenticator so that the goroutine
// serving a request grows its stack once, while the stack is still
// shallow. The apiserver's timeout filter runs every short request on a
// fresh goroutine whose stack starts small; left alone, it grows twice
// further down (in authentication and in writing the request to the host)
// and each growth copies and walks every frame above it: a tenth of the
// gateway's CPU for a get. Authentication is the first code of the
// gateway's that runs on that goroutine. Growing it there, a few frames
// deep, costs a quarter of that and takes 0.03 off a get's latency ratio
// (docs/benchmarks.md, "Growing the request goroutine's stack once").
func reserveStack(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		growStack(0)
		return a.AuthenticateRequest(r)
	})
}

// growStack needs a frame of stackReserve bytes, which makes the runtime
// grow the calling goroutine's stack to fit it (in one step) if it does
// not yet.
//
//go:noinline
func growStack(i int) byte {
	var frame [stackReserve]byte
	return touch(&frame, i)
}

// touch uses frame so that the compiler keeps it on growStack's stack.
//
//go:noinline
func touch(frame *[stackReserve]byte, i int) byte {
	frame[i] = 1
	return frame[i]
}
