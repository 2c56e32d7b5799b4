# Container mode's wrapper (src/sandbox/container): the program's parent under the engine's init,
# or under `exec` in a persistent container. It passes TERM, INT and HUP on to the program's whole
# process group, kills what the program left running in it when it ends, and when the program died
# of SIGKILL while the container's memory cgroup counted a new OOM kill, says so in a note (read
# and removed by the server): the engines cannot all tell (podman on cgroup v1 reports no OOM
# kill at all). It writes the group's id to a pid file unless that is "-" (the server signals a
# program run by `exec` with it: that CLI cannot).
# Usage: container_init.sh OOM_NOTE PID_FILE PROGRAM [ARGS...]
oom_kills() {
  local events key value
  for events in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$events" ] || continue
    while read -r key value; do
      if [ "$key" = oom_kill ]; then echo "$value"; return; fi
    done <"$events"
  done
  echo 0
}
note=$1 pid_file=$2
shift 2
before=$(oom_kills)
set -m # the program leads a process group of its own, and does not start with SIGINT ignored
# The shell's own notes (a job "Killed") must not join the program's stderr.
exec 9>&2 2>/dev/null
"$@" 2>&9 9>&- &
child=$!
exec 9>&-
[ "$pid_file" = - ] || echo "$child" >"$pid_file"
for signal in TERM INT HUP; do
  trap "kill -$signal -- -$child" "$signal"
done
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break # else wait was cut short by a signal we passed on
done
kill -KILL -- "-$child" 2>/dev/null # what it started in the background ends with it
[ "$pid_file" = - ] || { command -v rm >/dev/null && rm -f "$pid_file"; }
if [ "$status" -eq 137 ] && [ "$(oom_kills)" != "$before" ]; then
  : >"$note"
fi
exit "$status"
