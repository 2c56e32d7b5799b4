# Warm-pool driver: a pre-started sandbox that waits for one bash script and runs it in a bash
# started ahead of time. Protocol on fd 3: "R\n" once it waits for the job; the server sends a
# header "<bytes> <fields>\n", then the job: an end mark, the script path and its arguments, each
# ended by a NUL. Once the script has exited, the end mark goes on stdout and stderr after its
# output and its exit status back as "<status>\n", so the server need wait neither for the streams'
# end nor for the sandbox's exit; the driver then exits when the channel ends (the server's
# half-close, or its kill of a sandbox it holds stopped: then the exit comes after the result).
#
# The bash that runs the script (the runner) is started now and waits, its commands read and
# parsed: handing it the job costs less than starting a bash (~1.5 ms, measured). It reads the job
# from fd 3 itself (handing it over from this driver cost ~0.4 ms of a paced run: a second wake-up
# and every byte read twice, bash reading a pipe a byte at a time), tells this driver the end mark
# on a pipe of their own, and sources the script at its top level, so $0, $@, $$, BASH_SOURCE,
# FUNCNAME, exit statuses, signals and error messages are what `bash script` gives; only a
# top-level `return` differs (it ends the script, where bash would refuse it and go on), $- has
# the s of a bash reading commands from standard input, and fd 255 (where bash keeps the script it
# runs) is not open. None of this driver's variables or file descriptors reaches the script.
exec {told}<> <(:) # the pipe the runner tells the end mark on
exec {commands}> >(exec "$BASH" -s "$told")
runner=$!
exec {heard}<"/dev/fd/$told"
printf '%s\n' '{ told=$1' 'printf "R\n" >&3' \
  'read -r -u 3 size count || exit 0' \
  'mapfile -t -d "" -n "$count" -u 3 job' \
  'exec 3>&- </dev/null' \
  '[ "$count" -gt 1 ] && [ "${#job[@]}" -eq "$count" ] || exit 0' \
  'printf "%s\0" "${job[0]}" >&"$told"' \
  'exec {told}>&-' \
  'set -- "${job[@]:1}"' 'unset told job size count' 'BASH_ARGV0=$1' 'shift' '. "$0"' 'exit' \
  '}' >&"$commands"
exec {commands}>&- {told}>&-
# Until the runner has the job: at end of file it exited without one (the pool shut down).
IFS= read -r -d '' -u "$heard" mark || exit 0
# The script gets the real stderr; the driver's own (a job-status line like "Terminated" when the
# script dies of a signal) goes nowhere, as no such line appears when bash runs the script itself.
exec 4>&2 2>/dev/null
wait "$runner"
status=$?
# The marks and the status back to back: the server finds them all when it wakes up (on this VM,
# with the server idle, a second wake-up cost ~0.7 ms).
if [ -z "$mark" ] || { printf '%s' "$mark" && printf '%s' "$mark" >&4; }; then
  printf '%s\n' "$status" >&3 && while read -r -u 3 _; do :; done # until the channel ends
fi
exit "$status"
