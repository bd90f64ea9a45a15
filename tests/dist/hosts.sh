#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces this test makes itself, joined by a veth
# pair (10.77.<n>.1 and .2), with Open MPI's launcher pointed at `ip netns exec` instead of
# ssh and its traffic held to TCP over that pair, so every message crosses an interface. Runs
# the MPI test program (collectives, data-parallel equivalence) and two steps of `frugal
# train` across them, and checks the bytes that crossed. Skipped (exit 77) where namespaces
# cannot be made (not root, no CAP_NET_ADMIN). Usage: hosts.sh MPI_TESTS FRUGAL WORKDIR
set -uo pipefail
tests="$1"
frugal="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work"
id="$$"
net=$((id % 200 + 20))
h1="frugal-a$id" h2="frugal-b$id"
cleanup() {
  ip netns del "$h1" 2>/dev/null
  ip netns del "$h2" 2>/dev/null
}
trap cleanup EXIT
if ! ip netns add "$h1" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (needs root or CAP_NET_ADMIN)"
  exit 77
fi
ip netns add "$h2" || exit 1
ip link add "fa$id" type veth peer name "fb$id" || exit 1
ip link set "fa$id" netns "$h1" && ip link set "fb$id" netns "$h2" || exit 1
ip -n "$h1" addr add "10.77.$net.1/24" dev "fa$id" && ip -n "$h2" addr add "10.77.$net.2/24" \
  dev "fb$id" || exit 1
for h in "$h1" "$h2"; do ip -n "$h" link set lo up; done
ip -n "$h1" link set "fa$id" up && ip -n "$h2" link set "fb$id" up || exit 1

# The launcher's agent: "agent HOST COMMAND..." runs COMMAND in HOST's namespace with a
# hostname of its own (as ssh would on another machine).
cat >"$work/agent.sh" <<AGENT
#!/bin/sh
host="\$1"; shift
case "\$host" in
  10.77.$net.1) ns=$h1 ;;
  10.77.$net.2) ns=$h2 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$ns; \$*"
AGENT
chmod +x "$work/agent.sh"
printf "10.77.%s.1 slots=1\n10.77.%s.2 slots=1\n" "$net" "$net" >"$work/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(ip netns exec "$h1" mpirun --hostfile "$work/hosts" -np 2
  --mca plm_rsh_agent "$work/agent.sh" --mca btl tcp,self
  --mca btl_tcp_if_include "10.77.$net.0/24" --mca oob_tcp_if_include "10.77.$net.0/24"
  -x OMP_NUM_THREADS=1)
crossed() { ip -n "$h1" -s link show "fa$id" | awk '/RX:/{getline; print $1}'; }
before=$(crossed)
timeout 240 "${mpirun[@]}" bash -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"' || exit 1
timeout 240 "${mpirun[@]}" "$tests" || { echo "FAIL: the MPI tests across two hosts"; exit 1; }
timeout 240 "${mpirun[@]}" "$frugal" train --model small-cnn --data synthetic --batch 16 --steps 2 \
  --threads 1 --print-every 1000 >"$work/train.log" 2>&1 || {
  cat "$work/train.log"
  echo "FAIL: frugal train across two hosts"
  exit 1
}
grep -q "2 ranks" "$work/train.log" || { echo "FAIL: not 2 ranks"; exit 1; }
received=$(($(crossed) - before))
echo "bytes received by host 1 over its veth: $received"
((received > 100000)) || { echo "FAIL: too little traffic crossed the interface"; exit 1; }
echo "PASS"
