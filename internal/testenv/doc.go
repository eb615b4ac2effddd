// Package testenv starts the local Flotilla environment from tests: a host
// control plane and members built from the pinned Kubernetes components (see
// package localenv), with clients ready to use. Every integration and e2e
// test package starts one environment in TestMain and gives each test its
// own namespace:
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Main(m, testenv.Options{Members: 2}, &env))
//	}
//
//	func TestSomething(t *testing.T) {
//		testenv.Need(t, env)
//		ns := env.Namespace(t)
//		...
//	}
//
// The processes die with the test binary, even when a test panics or times
// out, and the state directory is removed afterwards. Under `go test -short`
// no environment starts and tests calling Need are skipped.
package testenv
