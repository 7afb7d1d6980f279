#!/bin/sh
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# runtime-restart-check.sh - the sentinel's check (issue 39): what the running containerd has
# loaded against what its next start will load - and (issue 48) whether it applies the CDI devices
# the node has specs for. A node-problem-detector custom plugin: one line on stdout, exit 0 = ok
# (condition False), 1 = problem (True), 2 = unknown (Unknown).
#
#   runtime-restart-check.sh pending|breaks [--config FILE] [--containerd BIN] [--crictl BIN]
#                                           [--endpoint URL] [--timeout SECONDS]
#   runtime-restart-check.sh cdi [--crictl BIN] [--endpoint URL] [--timeout SECONDS]
#                                [--cdi-spec-dir DIR]... [--plugins-registry DIR] [--dra-driver NAME]
#
#   pending  RuntimeRestartPending: the runtimes, the default runtime or CDI that `crictl info`
#            reports of the running daemon differ from what `containerd config dump` (a new
#            process of the binary that will start, reading the files) makes of the files.
#            The daemon unreachable is unknown (2), never ok.
#   breaks   RuntimeBreaksOnRestart: the next start will not serve CRI - the files do not load,
#            the CRI plugin is disabled, or default_runtime_name is not among the runtimes (1.6/1.7
#            with a drop-in that replaces the CRI table whole: runc gone). Needs no daemon.
#   cdi      RuntimeIgnoresCDI: the node has CDI specs of the DRA driver (*.json, *.yaml in the spec
#            folders - default /etc/cdi and /var/run/cdi - naming kind k8s.<driver>/...: NVIDIA's
#            DRA driver writes one per prepared claim) or the driver's kubelet plugin registered
#            (plugins_registry/*<driver>*; driver default gpu.nvidia.com) while the running
#            containerd applies no CDI - `crictl info` has enableCDI false, or neither enableCDI nor
#            cdiSpecDirs (1.6: CDI came with 1.7; 2.4+ has no switch, cdiSpecDirs alone: always
#            on) - or applies it but not from a folder holding those specs. Then a claim is
#            allocated and its containers get no device. Other specs (nvidia.com/gpu, which
#            NVIDIA's runtime in mode cdi applies itself) are only counted. The daemon is asked
#            only when there is something to apply; unreachable is unknown.
#
# POSIX sh + awk: it runs in busybox (the lab's image), in upstream's node-problem-detector image
# (bash) and on a host; it carries no TOML or JSON parser of its own - `config dump` prints the
# merged config in one regular form, and crictl's go-template reads the daemon's JSON.
# Environment defaults: RUNTIME_CHECK_CONFIG, RUNTIME_CHECK_CONTAINERD, RUNTIME_CHECK_CRICTL,
# RUNTIME_CHECK_ENDPOINT, RUNTIME_CHECK_TIMEOUT, RUNTIME_CHECK_CDI_SPEC_DIRS (space-separated),
# RUNTIME_CHECK_PLUGINS_REGISTRY, RUNTIME_CHECK_DRA_DRIVER.
set -u

mode=${1:-}
[ $# -gt 0 ] && shift
config=${RUNTIME_CHECK_CONFIG:-/etc/containerd/config.toml}
containerd=${RUNTIME_CHECK_CONTAINERD:-containerd}
crictl=${RUNTIME_CHECK_CRICTL:-crictl}
endpoint=${RUNTIME_CHECK_ENDPOINT:-unix:///run/containerd/containerd.sock}
timeout=${RUNTIME_CHECK_TIMEOUT:-4}
cdi_dirs=${RUNTIME_CHECK_CDI_SPEC_DIRS:-/etc/cdi /var/run/cdi}
registry=${RUNTIME_CHECK_PLUGINS_REGISTRY:-/var/lib/kubelet/plugins_registry}
dra_driver=${RUNTIME_CHECK_DRA_DRIVER:-gpu.nvidia.com}
given_dirs=""

unknown() { echo "unknown: $*"; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=${2:-}; shift 2 || unknown "--config needs a file" ;;
    --containerd) containerd=${2:-}; shift 2 || unknown "--containerd needs a binary" ;;
    --crictl) crictl=${2:-}; shift 2 || unknown "--crictl needs a binary" ;;
    --endpoint) endpoint=${2:-}; shift 2 || unknown "--endpoint needs a URL" ;;
    --timeout) timeout=${2:-}; shift 2 || unknown "--timeout needs seconds" ;;
    --cdi-spec-dir) [ -n "${2:-}" ] || unknown "--cdi-spec-dir needs a folder"; given_dirs="$given_dirs $2"; shift 2 ;;
    --plugins-registry) registry=${2:-}; shift 2 || unknown "--plugins-registry needs a folder" ;;
    --dra-driver) dra_driver=${2:-}; shift 2 || unknown "--dra-driver needs a driver name" ;;
    *) unknown "runtime-restart-check.sh: unknown argument '$1' (pending|breaks|cdi [--config F] [--containerd BIN] [--crictl BIN] [--endpoint URL] [--timeout S] [--cdi-spec-dir DIR]... [--plugins-registry DIR] [--dra-driver NAME])" ;;
  esac
done
case "$mode" in
  pending|breaks|cdi) ;;
  *) unknown "runtime-restart-check.sh: say pending or breaks (or cdi), not '$mode'" ;;
esac
[ -z "$given_dirs" ] || cdi_dirs=${given_dirs# }

tmp=$(mktemp -d 2>/dev/null || { d=/tmp/runtime-check.$$; mkdir -m 700 "$d" && echo "$d"; }) \
  || unknown "no writable temporary folder (TMPDIR or /tmp)"
trap 'rm -rf "$tmp"' EXIT

# the running containerd's CRI config through crictl info's Go TEMPLATE, into $tmp/info - or unknown
running_info() {
  command -v "$crictl" >/dev/null 2>&1 || unknown "crictl binary $crictl not found (--crictl)"
  if ! "$crictl" --runtime-endpoint "$endpoint" --timeout "${timeout}s" info -o go-template \
       --template "$1" >"$tmp/info" 2>"$tmp/info.err"; then
    unknown "containerd unreachable at $endpoint: $(grep -v '^[[:space:]]*$' "$tmp/info.err" | tail -1 | cut -c1-200)"
  fi
}
value() { sed -n "s/^$1=//p" "$tmp/next" | head -1; }

# ---- cdi: the node's claims by CDI (specs of the DRA driver, its registered plugin) against the
# running daemon's CDI. A spec of the driver names its kind k8s.<driver>/... (NVIDIA's:
# k8s.gpu.nvidia.com/claim, one per prepared claim); other specs (nvidia.com/gpu) are applied by
# NVIDIA's runtime in mode cdi itself, without containerd's CDI, and only counted.
cdi_check() {
  claims_said=""; claim_dirs=""; others=0
  for dir in $cdi_dirs; do
    n=0; first=""
    for f in "$dir"/*.json "$dir"/*.yaml; do
      [ -f "$f" ] || continue
      if grep -qF "k8s.$dra_driver/" "$f" 2>/dev/null; then
        n=$((n + 1)); [ -n "$first" ] || first=${f##*/}
      else
        others=$((others + 1))
      fi
    done
    [ "$n" -gt 0 ] || continue
    claim_dirs="$claim_dirs $dir"
    if [ "$n" -gt 1 ]; then more=", ..."; plural=s; else more=""; plural=""; fi
    claims_said="$claims_said${claims_said:+, }$dir holds $n CDI spec$plural of $dra_driver ($first$more)"
  done
  plugin=""
  for f in "$registry"/*"$dra_driver"*; do
    if [ -e "$f" ]; then plugin=$f; break; fi
  done
  if [ -z "$claim_dirs" ] && [ -z "$plugin" ]; then
    echo "no CDI spec of $dra_driver in $(echo "$cdi_dirs" | sed 's/ /, /g') and no DRA kubelet plugin $dra_driver registered in $registry: no claim's devices for containerd's CDI to apply ($others other CDI spec(s): NVIDIA's runtime applies those itself)"
    return 0
  fi
  needs=$claims_said
  [ -z "$plugin" ] || needs="$needs${needs:+; }the DRA kubelet plugin $dra_driver is registered ($plugin)"
  # shellcheck disable=SC2016 # a Go template, not shell
  running_info '{{with .config}}{{index . "enableCDI"}}|{{index . "cdiSpecDirs"}}{{end}}'
  info=$(head -1 "$tmp/info")
  case "$info" in
    *"|"*) ;;
    *) unknown "crictl info at $endpoint gave no CRI config (is this containerd's CRI?): $(echo "$info" | cut -c1-120)" ;;
  esac
  enabled=${info%%|*}
  known=$(echo "${info#*|}" | tr -d '[]')
  [ "$known" != "<no value>" ] || known=""
  version=$("$crictl" --runtime-endpoint "$endpoint" --timeout "${timeout}s" version 2>/dev/null |
    awk '$1 == "RuntimeVersion:" { print $2; exit }')
  daemon="containerd ${version:-of unknown version}"
  case "$enabled" in
    true) how="enableCDI true" ;;
    false)
      echo "$daemon has CDI off (crictl info: enableCDI false) but $needs: it drops the CDI devices the kubelet hands it - claims are allocated, their containers get no device. Set enable_cdi = true in its CRI plugin config and restart containerd"
      return 1 ;;
    *)
      if [ -z "$known" ]; then
        echo "$daemon knows no CDI (crictl info: no enableCDI, no cdiSpecDirs; CDI came with containerd 1.7) but $needs: it drops the CDI devices the kubelet hands it - claims are allocated, their containers get no device. Run containerd 1.7+ with enable_cdi = true (2.x: on by default)"
        return 1
      fi
      how="always on: cdiSpecDirs without enableCDI" ;;
  esac
  for dir in $claim_dirs; do
    case " $known " in
      *" $dir "*|*" ${dir%/} "*) ;;
      *)
        echo "$daemon applies CDI ($how) from $known only, but $needs: the claims' devices are unresolvable there. Add $dir to the CRI plugin's cdi_spec_dirs and restart containerd"
        return 1 ;;
    esac
  done
  echo "$daemon applies CDI ($how; spec folders $known): $needs"
  return 0
}
if [ "$mode" = cdi ]; then
  cdi_check
  exit $?
fi

# ---- the next start: `containerd config dump` by the binary that will start
command -v "$containerd" >/dev/null 2>&1 || unknown "containerd binary $containerd not found (--containerd)"
# no main config: containerd starts on its built-in defaults (the daemon ignores a missing file;
# `config dump` refuses one, `config default` prints them)
if [ ! -e "$config" ]; then config_said="$config absent: containerd's defaults"; else config_said=$config; fi
cver=$("$containerd" --version 2>/dev/null | awk '{ v = $3; sub(/[~+].*/, "", v); print v; exit }')
[ -n "$cver" ] || unknown "$containerd --version says nothing: not containerd?"
cmajor=${cver%%.*}
cfgdir=$(dirname "$config")

# next: "ok" or "fail <reason>"; then runtimes (sorted, comma), default, cdi (true|false), file
if [ -e "$config" ]; then set -- --config "$config" config dump; else set -- config default; fi
if "$containerd" "$@" >"$tmp/dump" 2>"$tmp/err"; then
  # runtimes, default, cdi, CRI disabled, imports - one awk pass, printed as KEY=VALUE lines
  awk -v major="$cmajor" '
    function unq(s) { gsub(/^["\047]|["\047]$/, "", s); return s }
    function crikey(t,   k) {
      if (major < 2 && match(t, /^plugins\.("io\.containerd\.grpc\.v1\.cri"|\047io\.containerd\.grpc\.v1\.cri\047|cri)/)) return RLENGTH
      if (match(t, /^plugins\.("io\.containerd\.cri\.v1\.runtime"|\047io\.containerd\.cri\.v1\.runtime\047)/)) return RLENGTH
      return 0
    }
    /^[ \t]*\[/ {
      t = $0; sub(/^[ \t]*\[/, "", t); sub(/\][ \t]*$/, "", t); table = t; sub_ = ""
      n = crikey(t)
      if (n) {
        sub_ = substr(t, n + 1)
        if (sub_ ~ /^\.containerd\.runtimes\./) {
          name = substr(sub_, length(".containerd.runtimes.") + 1)
          if (name ~ /^"[^"]*"$/ || name ~ /^\047[^\047]*\047$/ || name ~ /^[A-Za-z0-9_-]+$/) {
            name = unq(name); if (!(name in seen)) { seen[name] = 1; names[++count] = name }
          }
        }
        cri = 1
      } else cri = 0
      next
    }
    table == "" && /^[ \t]*disabled_plugins[ \t]*=/ { v = $0; sub(/^[^=]*=[ \t]*/, "", v); disabled = v }
    table == "" && /^[ \t]*imports[ \t]*=/ { v = $0; sub(/^[^=]*=[ \t]*/, "", v); imports = v }
    cri && sub_ == "" && /^[ \t]*enable_cdi[ \t]*=/ { v = $0; sub(/^[^=]*=[ \t]*/, "", v); cdi = v }
    cri && sub_ == ".containerd" && /^[ \t]*default_runtime_name[ \t]*=/ {
      v = $0; sub(/^[^=]*=[ \t]*/, "", v); def = unq(v)
    }
    END {
      # sort the names (few: insertion sort)
      for (i = 2; i <= count; i++) { x = names[i]; j = i - 1
        while (j > 0 && names[j] > x) { names[j + 1] = names[j]; j-- } names[j + 1] = x }
      list = ""; for (i = 1; i <= count; i++) list = list (i > 1 ? ", " : "") names[i]
      print "RUNTIMES=" list
      print "DEFAULT=" (def == "" ? "runc" : def)
      # absent: 1.6 has no CDI, 2.4 removed the switch (always on; RELEASES.md) - not compared
      print "CDI=" (cdi == "" ? "" : (cdi == "true" ? "true" : "false"))
      print "DISABLED=" disabled
      print "IMPORTS=" imports
    }' "$tmp/dump" >"$tmp/next"
  next_state=ok
else
  next_state=fail
  next_error=$(grep -v '^[[:space:]]*$' "$tmp/err" | tail -1 | cut -c1-300)
fi

# containerd 2.x: the daemon stops on an import that does not exist (cmd/containerd/command/
# main.go returns LoadConfig's error) while `config dump` ignores it (command/config.go)
if [ "$next_state" = ok ] && [ "$cmajor" -ge 2 ]; then
  for pattern in $(value IMPORTS | tr -d "[]\"'" | tr ',' ' '); do
    case "$pattern" in *[*?[]*) continue ;; esac
    case "$pattern" in /*) p=$pattern ;; *) p="$cfgdir/$pattern" ;; esac
    if [ ! -e "$p" ]; then
      next_state=fail
      next_error="its import $p does not exist"
      break
    fi
  done
fi

# ---- the files the next start reads: the main config and its imports (globs expanded), in order
imported_files() {
  list=$(value IMPORTS | tr -d "[]\"'" | tr ',' '\n')
  printf '%s\n' "$config"
  echo "$list" | while read -r pattern; do
    [ -n "$pattern" ] || continue
    case "$pattern" in /*) ;; *) pattern="$cfgdir/$pattern" ;; esac
    for f in $pattern; do [ -f "$f" ] && printf '%s\n' "$f"; done
  done
}

# the file that last declares a runtimes table - what the next start's runtimes come from
runtimes_file() {
  last=""
  for f in $(imported_files | awk '!seen[$0]++'); do
    grep -q 'containerd\.runtimes' "$f" 2>/dev/null && last=$f
  done
  printf '%s' "${last:-$config}"
}

breaks() {
  if [ "$next_state" = fail ]; then
    echo "containerd $cver will not start from $config_said: ${next_error:-config dump failed}"
    return 1
  fi
  disabled=$(value DISABLED)
  case "$disabled" in
    *io.containerd.grpc.v1.cri*|*io.containerd.cri.v1.runtime*|*'"cri"'*|*"'cri'"*)
      echo "next start of containerd $cver serves no CRI: the CRI plugin is in disabled_plugins of $config_said"
      return 1 ;;
  esac
  runtimes=$(value RUNTIMES)
  default=$(value DEFAULT)
  case ", $runtimes, " in
    *", $default, "*) ;;
    *)
      echo "next start of containerd $cver serves no CRI: default_runtime_name $default is not among runtimes ${runtimes:-none} - the containerd.runtimes table is replaced whole by $(runtimes_file)"
      return 1 ;;
  esac
  echo "next start of containerd $cver serves CRI with default runtime $default (runtimes $runtimes)"
  return 0
}

if [ "$mode" = breaks ]; then
  breaks
  exit $?
fi

# ---- pending: the running daemon, asked over CRI
# shellcheck disable=SC2016 # a Go template, not shell
running_info '{{with .config}}{{with .containerd}}{{.defaultRuntimeName}}|{{range $k, $v := .runtimes}}{{$k}},{{end}}{{end}}|{{index . "enableCDI"}}{{end}}'
info=$(head -1 "$tmp/info")
case "$info" in
  *"|"*"|"*) ;;
  *) unknown "crictl info at $endpoint gave no CRI config (is this containerd's CRI?): $(echo "$info" | cut -c1-120)" ;;
esac
loaded_default=${info%%|*}
rest=${info#*|}
loaded_list=${rest%|*}
loaded_cdi=${rest##*|}
case "$loaded_cdi" in true|false) ;; *) loaded_cdi="" ;; esac
loaded=$(echo "$loaded_list" | tr ',' '\n' | grep -v '^$' | sort | awk 'NR > 1 { printf ", " } { printf "%s", $0 } END { print "" }')

if [ "$next_state" = fail ]; then
  echo "loaded: ${loaded:-none}; next start: fails (${next_error:-config dump failed}) - $config_said"
  exit 1
fi
next=$(value RUNTIMES)
next_default=$(value DEFAULT)
next_cdi=$(value CDI)
diff=""
[ "$loaded" = "$next" ] || diff="runtimes"
[ "$loaded_default" = "$next_default" ] || diff="$diff${diff:+, }default runtime $loaded_default -> $next_default"
# CDI: compared where both sides say (containerd 1.7-2.3); 1.6 has none, 2.4+ always has it
if [ -n "$loaded_cdi" ] && [ -n "$next_cdi" ] && [ "$loaded_cdi" != "$next_cdi" ]; then
  diff="$diff${diff:+, }CDI $loaded_cdi -> $next_cdi"
fi
if [ -n "$diff" ]; then
  echo "loaded: ${loaded:-none}; next start: ${next:-none} ($diff differ; containerd $cver, $config_said$( [ "$loaded" = "$next" ] || printf ', runtimes from %s' "$(runtimes_file)"))"
  exit 1
fi
echo "loaded: ${loaded:-none}; next start: the same (default $next_default${next_cdi:+, CDI $next_cdi})"
exit 0
