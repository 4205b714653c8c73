#!/usr/bin/env bash
# Prints a process's resident memory from /proc: VmRSS (now) and VmHWM
# (the peak since it started), in MB (10^6 bytes), on one line.
# Usage: scripts/rss.sh PID|NAME   (a name: the newest process of that exact name, pgrep -n -x)
set -euo pipefail
arg="${1:?usage: scripts/rss.sh PID|NAME}"
if [[ "$arg" =~ ^[0-9]+$ ]]; then
  pid="$arg"
else
  pid="$(pgrep -n -x "$arg")" || { echo "rss.sh: no process named $arg" >&2; exit 1; }
fi
[[ -r "/proc/$pid/status" ]] || { echo "rss.sh: no process $pid" >&2; exit 1; }
awk -v pid="$pid" '
  /^VmRSS:/ { rss = $2 }   # kB (KiB)
  /^VmHWM:/ { hwm = $2 }
  END { printf "pid %s  VmRSS %.0f MB  VmHWM %.0f MB\n", pid, rss * 1024 / 1e6, hwm * 1024 / 1e6 }
' "/proc/$pid/status"
