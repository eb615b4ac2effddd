#!/usr/bin/env bash
# Runs every native Go fuzz target of the module (func FuzzXxx(f *testing.F)
# in a _test.go file) for FUZZTIME each, FUZZJOBS at a time (default: the
# number of cores): `go test -fuzz` takes one target per invocation, and
# most of each invocation is compiling and linking the instrumented test
# binary, which a second invocation overlaps. Targets are found by reading
# the test files of the packages `go list` reports (cheaper than `go test
# -list`, which builds every test binary), so a new target is picked up
# without editing anything. `make fuzz` runs this; FUZZTIME=30s make fuzz
# runs longer. Each target's output is printed whole when it ends.
#
# A target that finds a failing input fails the run; the input is written to
# the package's testdata/fuzz/<target>/ (commit it with the fix: it then runs
# as a regression test in every `go test`).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZJOBS=${FUZZJOBS:-$(nproc)}
if ! [[ "$FUZZJOBS" =~ ^[1-9][0-9]*$ ]]; then
	echo "FUZZJOBS must be a positive number, not \"$FUZZJOBS\"" >&2
	exit 2
fi
# Each target's fuzzing workers share the cores with the other targets'.
PARALLEL=$(( ($(nproc) + FUZZJOBS - 1) / FUZZJOBS ))

# inputs counts the failing inputs recorded for a target.
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

work=$(mktemp -d)
# On exit (a failure, or a signal), the jobs' `go test` processes go too,
# not only the subshells that run them.
trap 'for p in $(jobs -p); do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null || true; wait; rm -rf "$work"' EXIT

# fuzz runs one target and writes its report to $work/$4.log; it records
# a finding (a failing input) in $work/$4.failed, and that it ran and
# reported in $work/$4.done.
fuzz() {
	local dir=$1 pkg=$2 target=$3 n=$4
	local corpus="$dir/testdata/fuzz/$target" log="$work/$n.log" marker="$work/$n.marker"
	local before after status=0 out t0
	before=$(inputs "$corpus")
	touch "$marker"
	t0=$(date +%s)
	out=$("$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$PARALLEL" "$pkg" 2>&1) || status=$?
	after=$(inputs "$corpus")
	{
		echo "=== $pkg $target ($FUZZTIME)"
		echo "$out" | tail -n 3
		if [ "$status" -ne 0 ]; then
			# Go's fuzzing coordinator can report "context deadline exceeded"
			# when -fuzztime ends while a worker is busy, without any failing
			# input (golang/go#75804, fixed in Go 1.27): not a finding.
			if [ "$after" -eq "$before" ] && echo "$out" | grep -q '^    context deadline exceeded$' && ! echo "$out" | grep -q 'Failing input written'; then
				echo "--- $target: Go's end-of-fuzztime race (golang/go#75804), no failing input: ignored"
			else
				echo "$out"
				for f in $(find "$corpus" -type f -newer "$marker" 2>/dev/null); do
					echo "--- failing input $f:"
					cat "$f"
				done
				echo "$pkg $target" >"$work/$n.failed"
			fi
		fi
		echo "--- $target: $(($(date +%s) - t0))s"
	} >"$log"
	cat "$log"
	touch "$work/$n.done"
}

start=$(date +%s)
packages=$("$GO" list -f '{{.Dir}} {{.ImportPath}}' ./...)
count=0
while read -r dir pkg; do
	shopt -s nullglob
	files=("$dir"/*_test.go)
	shopt -u nullglob
	[ ${#files[@]} -gt 0 ] || continue
	for target in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\).*/\1/p' "${files[@]}"); do
		count=$((count + 1))
		# At most FUZZJOBS targets at once.
		while [ "$(jobs -rp | wc -l)" -ge "$FUZZJOBS" ]; do
			wait -n || true
		done
		fuzz "$dir" "$pkg" "$target" "$count" &
	done
done <<<"$packages"
wait

echo "fuzzed $count targets in $(($(date +%s) - start))s, $FUZZJOBS at a time"
shopt -s nullglob
failed=("$work"/*.failed)
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAIL:"
	cat "${failed[@]}"
	exit 1
fi
reported=("$work"/*.done)
if [ ${#reported[@]} -ne "$count" ]; then
	echo "FAIL: $((count - ${#reported[@]})) of $count fuzz jobs could not run or report (see above)"
	exit 1
fi
