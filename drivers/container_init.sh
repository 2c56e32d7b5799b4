# Container mode's wrapper (src/sandbox/container): the program's parent under the engine's init,
# or under `exec` in a persistent container. It passes TERM, INT and HUP on to the program's whole
# process group and kills what the program left running when it ends (its group; in a container of
# its own, everything but the engine's init). When the container's
# memory cgroup counted a new OOM kill of it, or its pids cgroup refused a fork, it names that
# limit in a note (read and removed by the server): the engines do not all tell (podman on cgroup
# v1 reports no OOM kill at all). In a container of its own ("run": a warm driver tells its
# cgroups on its channel instead) it first leaves its cgroups beside the note (NOTE.cgroup): a
# timeout's kill of the container ends this wrapper before it can write the note, and the server
# then reads the counters itself. It writes the group's id to a pid file unless that is "-" (the
# server signals a program run by `exec` with it: that CLI cannot).
# MODE: "run" (a container of its own), "linger" (the same, then it stops itself, so the container
# stays until the server removes it with others, when idle: a container's teardown costs ~0.1 s
# of the engine's CPU that would compete with the next run), "warm" (a warm driver's container
# started by the OCI runtime, whose teardown is cheap: as "linger" but ends), or "exec" (a command
# in a persistent container).
# Usage: container_init.sh MODE NOTE PID_FILE PROGRAM [ARGS...]

# count VAR FILE KEY: VAR gets the counter KEY of a cgroup events file, or 0. No subshell: under
# a fork bomb the pids limit refuses every fork.
count() {
  local key value
  printf -v "$1" 0
  [ -r "$2" ] || return 0
  while read -r key value; do
    if [ "$key" = "$3" ]; then printf -v "$1" %s "$value"; fi
  done <"$2"
}
counters() {
  count oom_v1 /sys/fs/cgroup/memory/memory.oom_control oom_kill
  count oom_v2 /sys/fs/cgroup/memory.events oom_kill
  count pids_v1 /sys/fs/cgroup/pids/pids.events max
  count pids_v2 /sys/fs/cgroup/pids.events max
  ooms=$oom_v1.$oom_v2 refusals=$pids_v1.$pids_v2
}

mode=$1 note=$2 pid_file=$3
shift 3
counters
ooms_before=$ooms refusals_before=$refusals
if [ "$mode" = run ]; then
  cgroups=
  while IFS= read -r line; do cgroups+="${cgroups:+;}$line"; done </proc/self/cgroup
  printf '%s\n' "$cgroups" >"$note.cgroup"
fi
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
# In a container of its own, also what left the group (setsid): every process of the container's
# user but this one and the engine's init.
[ "$mode" = exec ] || kill -KILL -1 2>/dev/null
[ "$pid_file" = - ] || { command -v rm >/dev/null && rm -f "$pid_file"; }
counters
if [ "$status" -eq 137 ] && [ "$ooms" != "$ooms_before" ]; then
  echo memory >"$note"
elif [ "$refusals" != "$refusals_before" ]; then
  echo processes >"$note"
fi
# Only after a program that ended by itself: its driver has reported. One killed by a signal (the
# memory limit) reported nothing, and the server waits for the container's end.
[ "$mode" = linger ] && [ "$status" -lt 128 ] && kill -STOP $$
exit "$status"
