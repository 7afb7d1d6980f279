#!/usr/bin/env bash
# Class setup on this machine: N trainee hosts (local users reached over SSH on 127.0.0.1,
# Debian's sshd started here on a free port, as tests/cluster/test_classroom.py does), for
# each N in BENCH_HOSTS (default "1 2 4"):
#   wall time of playbooks/classroom.yml from fresh users (binaries shipped from the controller)
#   bytes shipped (what the setup report says it copied), and the rerun's time and changed count
#   the controller's peak memory: the largest sum of RSS over ansible-playbook, its forks and
#   its SSH clients (sampled every 0.2 s)
# BENCH_BUILD=1 adds the alternative, each host building the control plane itself: N cold
# builds at once (toolchain/build.sh, each with an empty Go build cache, the shared module
# cache read-only, no network), wall time and bytes built. It takes 15-25 minutes per build
# on 2 cores, so it is off by default.
#   sudo bench/classroom.sh                   BENCH_HOSTS="1 2" bench/classroom.sh
# Needs root (useradd, sshd) and the controller's binaries (make lab); leaves no user, process
# or cluster behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_FORCE_COLOR=0
. bench/lib.sh
[ "$(id -u)" = 0 ] || { echo "bench/classroom.sh creates users and runs sshd: run it as root" >&2; exit 1; }
toolchain/host-setup.sh test   # sshd and the trainee hosts' python3 (toolchain/host-packages)
[ -x "$bin/kwokctl" ] || { echo "no binaries in $bin: make lab first" >&2; exit 1; }
work=$(mktemp -d /tmp/bench-classroom.XXXXXX)
chmod 700 "$work"
tag=$(printf '%04x' $((RANDOM % 65536)))
users=()
sshd_pid=""
cleanup() {
  set +e
  [ -f "$work/inventory/classroom.yml" ] && ansible-playbook playbooks/teardown.yml -i "$work/inventory/classroom.yml" >"$work/teardown.log" 2>&1
  [ -n "$sshd_pid" ] && kill "$sshd_pid"
  local u p
  for u in "${users[@]}"; do
    for p in $(pgrep -u "$u"); do kill -9 "$p"; done   # this bench's own users only
    userdel -r -f "$u" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$work/host"
ssh-keygen -q -t ed25519 -N '' -f "$work/client"
mkdir -p /run/sshd "$work/inventory/group_vars"
ln -s "$PWD/inventory/group_vars/all" "$work/inventory/group_vars/all"
max=0
for n in ${BENCH_HOSTS:-1 2 4}; do ((n > max)) && max=$n; done
for ((i = 1; i <= max; i++)); do
  users+=("bench${tag}u$i")
done
printf 'Port %s\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nAllowUsers %s\nSubsystem sftp internal-sftp\n' \
  "$port" "$work/host" "$work/sshd.pid" "${users[*]}" > "$work/sshd_config"
/usr/sbin/sshd -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
sshd_pid=$!
for ((t = 0; t < 150; t++)); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2   # poll interval: wait until sshd listens (30 s at most)
done

fresh_users() { # N: users 1..N anew, each with the client key
  local i u
  for ((i = 1; i <= $1; i++)); do
    u=bench${tag}u$i
    for p in $(pgrep -u "$u" 2>/dev/null); do kill -9 "$p"; done
    userdel -r -f "$u" >/dev/null 2>&1 || true
    useradd -m -s /bin/bash "$u" && usermod -p '*' "$u"
    install -d -o "$u" -g "$u" -m 700 "/home/$u/.ssh"
    install -o "$u" -g "$u" -m 600 "$work/client.pub" "/home/$u/.ssh/authorized_keys"
  done
}

inventory() { # N
  local i
  {
    printf 'all:\n  children:\n    trainees:\n      hosts:\n'
    for ((i = 1; i <= $1; i++)); do
      printf '        trainee-%02d: {ansible_host: 127.0.0.1, ansible_port: %s, ansible_user: bench%su%d, ansible_ssh_private_key_file: %s, ansible_ssh_common_args: "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no", lab_real_node: false, lab_cluster_name: bench-%s-%d, lab_port_base: %d}\n' \
        "$i" "$port" "$tag" "$i" "$work/client" "$tag" "$i" $((21000 + i * 10))
    done
  } > "$work/inventory/classroom.yml"
}

# timed LOG CMD...: run CMD in its own session; print "seconds peak-MB" (sum of RSS of the session)
timed() {
  local log=$1; shift
  local t0 t1 peak=0 kb
  t0=$(now)
  setsid "$@" > "$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    kb=$(ps -o rss= -s "$pid" 2>/dev/null | awk '{s += $1} END {print s + 0}')
    ((kb > peak)) && peak=$kb
    sleep 0.2   # sampling interval of the memory probe
  done
  wait "$pid" || { tail -30 "$log" >&2; exit 1; }
  t1=$(now)
  echo "$(secs "$t0" "$t1") $((peak / 1024))"
}

rows=()
for n in ${BENCH_HOSTS:-1 2 4}; do
  if [ -f "$work/inventory/classroom.yml" ]; then
    ansible-playbook playbooks/teardown.yml -i "$work/inventory/classroom.yml" >"$work/teardown.log" 2>&1 || true
  fi
  fresh_users "$n"
  inventory "$n"
  read -r wall mem < <(timed "$work/setup-$n.log" ansible-playbook playbooks/classroom.yml -i "$work/inventory/classroom.yml" -f 10)
  shipped=$(grep -Eo 'shipped .* \(([0-9.]+) MB\)' "$work/setup-$n.log" | grep -Eo '[0-9.]+ MB' | awk '{s += $1} END {printf "%.0f", s}')
  ready=$(grep -c ': ready - ' "$work/setup-$n.log" || true)
  read -r rerun rmem < <(timed "$work/rerun-$n.log" ansible-playbook playbooks/classroom.yml -i "$work/inventory/classroom.yml" -f 10)
  changed=$(grep -Eo 'changed=[0-9]+' "$work/rerun-$n.log" | sort -u | paste -sd/ -)
  printf '  N=%s: setup %ss, %s ready, shipped %s MB, controller peak %s MB; rerun %ss (%s, peak %s MB)\n' \
    "$n" "$wall" "$ready" "$shipped" "$mem" "$rerun" "$changed" "$rmem" >&2
  row="| $n | $wall | $shipped | $mem | $rerun ($changed) |"
  if [ "${BENCH_BUILD:-}" = 1 ]; then
    # each host building for itself: N cold builds at once on this machine's cores
    t0=$(now)
    builds=()
    for ((i = 1; i <= n; i++)); do
      ( out=$work/build-$i; mkdir -p "$out"
        for c in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl; do
          GOCACHE=$work/gocache-$i GOFLAGS=-mod=readonly GOPROXY=off toolchain/build.sh "$c" "$out" >>"$work/build-$i.log" 2>&1
        done ) &
      builds+=($!)
    done
    wait "${builds[@]}"   # the builds only: a bare `wait` would also wait for sshd, which never ends
    t1=$(now)
    built=$(du -scm "$work"/build-*/ | tail -1 | cut -f1)
    rm -rf "$work"/gocache-* "$work"/build-*/
    row+=" $(secs "$t0" "$t1") ($built MB built) |"
  else
    row+=" not run |"
  fi
  rows+=("$row")
done

echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%d); trainee hosts are local users over SSH on 127.0.0.1"
echo
echo "| trainee hosts | class setup, binaries shipped (s) | shipped (MB) | controller peak (MB) | rerun (s, changed) | each host builds (s) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
