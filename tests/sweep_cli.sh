#!/usr/bin/env bash
# `mbk sweep` end to end (ctest sweep_cli): bitwise-equal tables on 1, 2 and 4
# threads; a member that fails keeps its row (status, message) and the exit
# code says so; a sweep killed part-way and resumed ends with the same bytes as
# an uninterrupted run; bad specs give a clear message and write nothing; with
# MPI (second argument "mpi"), 1, 2 and 3 ranks give the same bytes again.
set -u
mbk=$1 mpi=${2:-} work=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_NUM_THREADS=1
rm -rf "$work"; mkdir -p "$work"; cd "$work"
. "$here/check_lib.sh"

# 1. threads: 1, 2, 4 give the same bytes (constraints: the four-bar, assembled per member)
common=(builtin:fourbar --samples 5 --seed 7 --vary 'u0:crank_pin=uniform(1,4)' --vary 'mass:coupler=list(0.5,2)'
        --vary 'gravity.y=normal(-9.81,1)' --t-final 2 --plot none --quiet)
for t in 1 2 4; do
  "$mbk" sweep "${common[@]}" --threads $t --output t$t.csv > t$t.log 2>&1
  check test $? -eq 0
done
check cmp -s t1.csv t2.csv
check cmp -s t1.csv t4.csv
check test "$(wc -l < t1.csv)" -eq 11
check grep -q '^member,u0:crank_pin,mass:coupler,gravity.y,q0,q1,q2,u0,u1,u2,energy_drift,t_end,steps,status,message$' t1.csv

# 2. failure isolation: a massless tip link cannot move; the others go on
"$mbk" sweep builtin:chain:3 --vary 'mass:link3=list(1,0,2)' --vary 'q0:joint1=grid(0,0.5,2)' --t-final 1 \
  --output f.csv --plot f.svg > f.log 2> f.err
check test $? -eq 1
check test "$(grep -c ',ok,$' f.csv)" -eq 4
check test "$(grep -c ',MBK_ESINGULAR,"' f.csv)" -eq 2
check grep -q 'articulated inertia is singular' f.csv
check grep -q '2 of 6 members failed' f.err
check grep -q '<svg' f.svg

# 3. kill part-way, resume, compare with an uninterrupted run
long=(builtin:chain:6 --samples 240 --vary 'q0:joint2=uniform(-1,1)' --vary 'gravity.z=grid(-10,-8,2)'
      --t-final 10 --accuracy 1e-7 --plot none --quiet)
"$mbk" sweep "${long[@]}" --threads 2 --output ref.csv > ref.log 2>&1
check test $? -eq 0
"$mbk" sweep "${long[@]}" --threads 2 --output cut.csv > cut.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  rows=$(($(wc -l 2>/dev/null < cut.csv || echo 0)))
  [ "$rows" -ge 40 ] && break
  sleep 0.02
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rows=$(wc -l < cut.csv)
check test "$rows" -lt 481   # part-way
printf '17,0.5' >> cut.csv      # a row cut by the kill
"$mbk" sweep "${long[@]}" --threads 2 --output cut.csv --resume > resume.log 2>&1
check test $? -eq 0
check grep -q 'read back from the output' resume.log
check cmp -s ref.csv cut.csv
# resuming a finished sweep runs nothing and changes nothing
"$mbk" sweep "${long[@]}" --threads 1 --output cut.csv --resume > resume2.log 2>&1
check grep -q 'run          0 members' resume2.log
check cmp -s ref.csv cut.csv
# a resume with other parameters is refused, and the file is left alone
cp cut.csv keep.csv
"$mbk" sweep "${long[@]}" --seed 99 --output cut.csv --resume > other.log 2>&1
check test $? -eq 2
check cmp -s keep.csv cut.csv
# ... and so is one with other settings of the runs (FILE.settings holds them): the rows would mix two
"$mbk" sweep "${long[@]}" --t-final 5 --output cut.csv --resume > other2.log 2>&1
check test $? -eq 2
check grep -q 'cut.csv was started with --t-final 10 (cut.csv.settings), this sweep has --t-final 5' other2.log
"$mbk" sweep "${long[@]}" --integrator rk4 --step 0.01 --output cut.csv --resume > other3.log 2>&1
check test $? -eq 2
check grep -q 'started with --integrator rkmerson' other3.log
check cmp -s keep.csv cut.csv
# without the settings, the rows cannot be checked: refused too
mv cut.csv.settings cut.settings.keep
"$mbk" sweep "${long[@]}" --output cut.csv --resume > other4.log 2>&1
check test $? -eq 2
check grep -q 'cannot read cut.csv.settings' other4.log
mv cut.settings.keep cut.csv.settings
check cmp -s keep.csv cut.csv

# 4. bad specs: a clear message, nothing written
i=0
for spec in 'nope=uniform(0,1)' 'q0:joint1=uniform(2,1)' 'q0:joint1=uniform(0,x)' 'q0:joint1=grid(0,1,0)' \
            'gravity.z=normal(0,-1)' 'gravity.bogus=list(1)' 'q0:nojoint=list(1)' 'gravity.z=triangle(0,1)' \
            'gravity.z=list()' 'gravity.z'; do
  i=$((i + 1))
  "$mbk" sweep builtin:chain:2 --vary "$spec" --output bad$i/out.csv --plot bad$i/plot.svg > bad$i.log 2>&1
  check test $? -eq 2
  check test ! -e bad$i
  check grep -q 'mbk sweep: ' bad$i.log
done
for opt in '--samples 0' '--samples -3' '--samples 1.5' '--seed x' '--threads abc'; do
  i=$((i + 1))
  "$mbk" sweep builtin:chain:2 $opt --output bad$i/out.csv > bad$i.log 2>&1
  check test $? -eq 2
  check test ! -e bad$i
done
# the integration options are checked as mbk run checks them; one value named twice; masses
"$mbk" sweep builtin:chain:2 --integrator cvode-bdf --step 0.01 --output bads/out.csv > bads.log 2>&1
check test $? -eq 2
check test ! -e bads
check grep -q 'mbk sweep: --step: cvode-bdf chooses its own steps' bads.log
"$mbk" sweep builtin:chain:2 --vary 'q0:joint1=uniform(0,1)' --vary 'q0:joint1[0]=uniform(5,6)' \
  --output badv/out.csv > badv.log 2>&1
check test $? -eq 2
check test ! -e badv
check grep -q 'q0:joint1 and --vary q0:joint1\[0\] name the same value' badv.log
"$mbk" sweep builtin:chain:2 --vary 'mass:link1=list(1,-2)' --output badm/out.csv > badm.log 2>&1
check test $? -eq 2
check grep -q 'masses are >= 0' badm.log
check grep -q "unknown parameter 'nope'" bad1.log
check grep -q 'a = 2 is greater than b = 1' bad2.log
check grep -q "'x' is not a finite number" bad3.log
# the options mbk run shares read their lists as mbk run does: the bad value named
"$mbk" sweep builtin:chain:2 --gravity 1,x,3 --output badg/out.csv > badg.log 2>&1
check test $? -eq 2
check grep -q "mbk sweep: --gravity: value 2 ('x') is not a number" badg.log
"$mbk" sweep builtin:chain:2 --q0 0.1 --t-final 0.1 --output badq/out.csv > badq.log 2>&1
check test $? -eq 2
check test ! -e badq
check grep -q "mbk sweep: --q0 needs 2 comma-separated numbers for this model (nq = 2), got 1" badq.log
"$mbk" sweep builtin:chain:2 --q0 joint1=1:2 --t-final 0.1 --output badj/out.csv > badj.log 2>&1
check test $? -eq 2
check grep -q "mbk sweep: --q0: joint 'joint1' has 1 q; give 1 number separated by ':'" badj.log

# 5. the other kinds of names: enable flags, ELEMENT.PARAM (also a URDF's "damping:JOINT"), u0
"$mbk" sweep builtin:chain:2 --vary 'enabled:gravity=list(0,1)' --t-final 1 --output en.csv --plot none --quiet > en.log 2>&1
check test $? -eq 0
check grep -q '^0,0,0.29999999999999999,0.59999999999999998,0,0,' en.csv   # no gravity: nothing moves
"$mbk" sweep builtin:chain:2 --vary 'gravity.gz=list(-9.81,-3)' --t-final 1 --output gz.csv --plot none --quiet > gz.log 2>&1
"$mbk" sweep builtin:chain:2 --vary 'gravity.z=list(-9.81,-3)' --t-final 1 --output gc.csv --plot none --quiet > gc.log 2>&1
check cmp -s <(tail -n +2 gz.csv) <(tail -n +2 gc.csv)
urdf=$here/urdf/double_pendulum.urdf
"$mbk" sweep "$urdf" --vary 'damping:shoulder.c=list(0,0.5)' --vary 'u0:elbow=uniform(-1,1)' --samples 2 --t-final 1 \
  --output ur.csv --plot none --quiet > ur.log 2>&1
check test $? -eq 0
check test "$(grep -c ',ok,$' ur.csv)" -eq 4
check grep -q '^member,damping:shoulder.c,u0:elbow,' ur.csv
"$mbk" sweep "$urdf" --vary 'damping:shoulder.q=list(1)' --output ub/x.csv > ub.log 2>&1
check test $? -eq 2
check grep -q "has no parameter 'q'; its parameters: c" ub.log

# 6. MPI: 1, 2 and 3 ranks give the same bytes as the threads
if [ "$mpi" = mpi ]; then
  for np in 1 2 3; do
    mpirun --allow-run-as-root --oversubscribe -np $np "$mbk" sweep "${common[@]}" --threads 1 --output m$np.csv \
      > m$np.log 2>&1
    check test $? -eq 0
    check cmp -s t1.csv m$np.csv
  done
  check grep -q '3 MPI ranks' m3.log
  # rank 0 alone writes to stdout, --help too
  check test "$(mpirun --allow-run-as-root --oversubscribe -np 2 "$mbk" sweep --help | grep -c '^usage')" -eq 1
  # failures under MPI: same rows, same exit code
  mpirun --allow-run-as-root --oversubscribe -np 2 "$mbk" sweep builtin:chain:3 --vary 'mass:link3=list(1,0,2)' \
    --vary 'q0:joint1=grid(0,0.5,2)' --t-final 1 --threads 1 --output mf.csv --plot none > mf.log 2>&1
  check test $? -ne 0
  check cmp -s f.csv mf.csv
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
