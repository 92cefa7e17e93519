#!/usr/bin/env bash
# `mpirun -np N mbk sweep` when one rank fails (ctest sweep_mpi_stop, N = 2 and 3):
# every rank stops, none hangs, and the exit status and rank 0's message say what
# happened (docs/cli.md: 4 when the output cannot be written). Each mpirun runs
# under `timeout`, so a rank left waiting is a failure here, not a stuck test.
#   - rank 0's output fills up part-way (a file size limit on rank 0 alone,
#     set by a wrapper in mpirun's MPMD form): 4, "cannot write"
#   - rank 0's output cannot be created: 4, nothing run; it is not a regular
#     file (/dev/full): 2, nothing run
#   - the last rank cannot load its model, or has a bad option (mpirun's
#     MPMD form gives it other arguments): that rank's status (3, 2), its
#     message named with its rank by rank 0, nothing written
#   - the last rank builds another ensemble: 1, "ensembles differ"
set -u
mbk=$(realpath "$1") work=${2:-$(mktemp -d)}
export OPENBLAS_NUM_THREADS=1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"; cd "$work"
. "$here/check_lib.sh"
mpi=(mpirun --allow-run-as-root --oversubscribe)
opts=(--samples 200 --seed 3 --vary 'q0:joint1=uniform(0,1)' --t-final 2 --threads 1 --plot none --quiet)

# run NAME COMMAND...: the exit status in $rc, stderr in NAME.err; 124 = it hung
run() {
  local name=$1; shift
  timeout 30 "$@" > "$name.out" 2> "$name.err"
  rc=$?
  [ $rc -eq 124 ] && echo "FAIL: $name hung (killed after 30 s)" >&2
}

# rank0_limited PROGRAM ARGS...: PROGRAM with files limited to 16 KiB (its writes past
# that fail with EFBIG; SIGXFSZ ignored, so they fail rather than kill it)
printf '#!/bin/sh\ntrap "" XFSZ\nulimit -f 16\nexec "$@"\n' > rank0_limited
chmod +x rank0_limited

for np in 2 3; do
  last=$((np - 1))
  run full$np "${mpi[@]}" -np 1 ./rank0_limited "$mbk" sweep builtin:chain:3 "${opts[@]}" --output full$np.csv \
    : -np $last "$mbk" sweep builtin:chain:3 "${opts[@]}" --output full$np.csv
  check test $rc -eq 4
  check grep -q "mbk sweep: cannot write full$np.csv: File too large" full$np.err

  run dev$np "${mpi[@]}" -np $np "$mbk" sweep builtin:chain:3 "${opts[@]}" --output /dev/full
  check test $rc -eq 2
  check grep -q 'mbk sweep: --output /dev/full is not a regular file' dev$np.err

  run nodir$np "${mpi[@]}" -np $np "$mbk" sweep builtin:chain:3 "${opts[@]}" --output /dev/null/x/out.csv
  check test $rc -eq 4
  check grep -q 'cannot write /dev/null/x/out.csv' nodir$np.err

  run model$np "${mpi[@]}" -np $last "$mbk" sweep builtin:chain:3 "${opts[@]}" --output model$np.csv \
    : -np 1 "$mbk" sweep "$work/missing.urdf" "${opts[@]}" --output model$np.csv
  check test $rc -eq 3
  check grep -q "stopped before the run: rank $last: .*missing.urdf" model$np.err
  check test ! -e model$np.csv

  run usage$np "${mpi[@]}" -np $last "$mbk" sweep builtin:chain:3 "${opts[@]}" --output usage$np.csv \
    : -np 1 "$mbk" sweep builtin:chain:3 "${opts[@]}" --samples 0 --output usage$np.csv
  check test $rc -eq 2
  check grep -q "stopped before the run: rank $last: --samples" usage$np.err
  check test ! -e usage$np.csv

  run other$np "${mpi[@]}" -np $last "$mbk" sweep builtin:chain:3 "${opts[@]}" --output other$np.csv \
    : -np 1 "$mbk" sweep builtin:chain:3 "${opts[@]}" --vary 'gravity.z=list(-9,-8)' --output other$np.csv
  check test $rc -eq 1
  check grep -q "the ranks' ensembles differ" other$np.err
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
