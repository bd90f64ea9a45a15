#!/usr/bin/env bash
# `mpirun -np N frugal train` end to end on loopback, and its faults:
#   1. ranks started with different options stop at start-up with an error naming the rank;
#   2. a rank stopped mid-epoch (SIGSTOP: alive, silent) ends the job within the timeout
#      with an error naming it, and the last checkpoint is intact and resumes on 3 ranks and
#      on 1;
#   3. a rank killed mid-epoch (SIGKILL) ends the job, and the launcher names it.
# Usage: ranks.sh FRUGAL WORKDIR
set -uo pipefail
frugal="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpirun=(mpirun --oversubscribe)
fail() {
  echo "FAIL: $*"
  exit 1
}

# The pid of rank R of the job whose command line mentions $work.
rank_pid() {
  local r="$1" p
  for p in $(pgrep -f "frugal.* train .*$work"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$r"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# Waits up to 60 s for job $1 to end; fails naming $2 if it does not. Sets `rc` and `waited`.
wait_for_end() {
  local job="$1" what="$2" start
  start=$(date +%s)
  waited=0
  while kill -0 "$job" 2>/dev/null && ((waited < 60)); do
    sleep 0.5
    waited=$(($(date +%s) - start))
  done
  if kill -0 "$job" 2>/dev/null; then
    kill -KILL "$job"
    fail "the job still ran 60 s after $what"
  fi
  wait "$job"
  rc=$?
}

train=(train --model small-cnn --data synthetic --batch 24 --steps 40 --threads 1
  --print-every 1000 --comm-timeout 4)

echo "== 1. mismatched options"
out=$("${mpirun[@]}" -np 1 "$frugal" "${train[@]}" --epochs 1 --lr 0.05 \
  : -np 1 "$frugal" "${train[@]}" --epochs 1 --lr 0.1 2>&1)
rc=$?
echo "$out" | tail -5
[[ $rc -ne 0 ]] || fail "ranks with different options trained"
grep -q "rank(s) 1 differ from rank 0" <<<"$out" || fail "no error naming rank 1"

echo "== 2. a stopped rank"
ckpt="$work/stop.safetensors"
"${mpirun[@]}" -np 3 "$frugal" "${train[@]}" --epochs 400 --save "$ckpt" >"$work/stop.log" 2>&1 &
job=$!
for _ in $(seq 600); do [[ -f "$ckpt" ]] && break; sleep 0.1; done
[[ -f "$ckpt" ]] || fail "no checkpoint after 60 s: $(tail -5 "$work/stop.log")"
victim=$(rank_pid 1) || fail "rank 1's process not found"
kill -STOP "$victim"
wait_for_end "$job" "rank 1 stopped"
kill -KILL "$victim" 2>/dev/null
tail -4 "$work/stop.log"
echo "ended ${waited} s after rank 1 stopped (timeout 4 s), exit $rc"
[[ $rc -ne 0 ]] || fail "exit 0 after a rank stopped"
grep -q "rank 1 has not been heard from" "$work/stop.log" || fail "no error naming rank 1"
# (mpirun gives ranks a terminal: the progress bar's carriage returns share lines with these.)
epochs_done=$(grep -o "epoch [0-9]*/400  loss" "$work/stop.log" | wc -l)
((epochs_done >= 1)) || fail "no epoch finished before the stop"
# The checkpoint on disk is whole: it resumes, on 3 ranks and on 1, and finishes one more epoch.
resume_epochs=$((epochs_done + 2))
"${mpirun[@]}" -np 3 "$frugal" "${train[@]}" --epochs "$resume_epochs" --resume "$ckpt" \
  >"$work/resume3.log" 2>&1 || fail "resume on 3 ranks: $(tail -5 "$work/resume3.log")"
grep -q "resumed from" "$work/resume3.log" || fail "resume on 3 ranks did not resume"
"$frugal" "${train[@]}" --epochs "$resume_epochs" --resume "$ckpt" >"$work/resume1.log" 2>&1 ||
  fail "resume on 1 rank: $(tail -5 "$work/resume1.log")"
grep -q "epoch $resume_epochs/$resume_epochs  loss" "$work/resume1.log" || fail "resume on 1 rank"

echo "== 3. a killed rank"
"${mpirun[@]}" -np 3 "$frugal" "${train[@]}" --epochs 400 --log "$work/kill.jsonl" \
  >"$work/kill.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "epoch 1/400  loss" "$work/kill.log" && break; sleep 0.1; done
victim=$(rank_pid 2) || fail "rank 2's process not found"
kill -KILL "$victim"
wait_for_end "$job" "rank 2 was killed"
tail -4 "$work/kill.log"
echo "ended ${waited} s after rank 2 was killed, exit $rc"
[[ $rc -ne 0 ]] || fail "exit 0 after a rank was killed"
# Rank 0 alone writes the log: one line per epoch, epochs counted from 1 without repeats.
python3 - "$work/kill.jsonl" <<'PY' || fail "the log of 3 ranks is not one line per epoch"
import json, sys
epochs = [json.loads(line)["epoch"] for line in open(sys.argv[1])]
assert epochs and epochs == list(range(1, len(epochs) + 1)), epochs
PY
grep -Eq "rank 2 (with PID|has not been heard)" "$work/kill.log" || fail "nothing names rank 2"
echo "PASS"
