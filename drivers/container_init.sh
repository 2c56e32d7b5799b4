# Container mode's wrapper (src/sandbox/container): the program's parent under the engine's init.
# It passes TERM, INT and HUP on to the program's whole process group, and when the program died
# of SIGKILL while the container's memory cgroup counts an OOM kill, it says so in the workspace
# (.codexec-oom, read and removed by the server) before exiting with the program's status: the
# engines cannot all tell (podman on cgroup v1 reports no OOM kill at all).
set -m # the program leads a process group of its own, and does not start with SIGINT ignored
# The shell's own notes (a job "Killed") must not join the program's stderr.
exec 9>&2 2>/dev/null
"$@" 2>&9 9>&- &
exec 9>&-
child=$!
for signal in TERM INT HUP; do
  trap "kill -$signal -- -$child 2>/dev/null" "$signal"
done
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break # else wait was cut short by a signal we passed on
done
if [ "$status" -eq 137 ]; then
  for events in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$events" ] || continue
    while read -r key value; do
      if [ "$key" = oom_kill ] && [ "$value" != 0 ]; then : >/workspace/.codexec-oom; fi
    done <"$events"
  done
fi
exit "$status"
