# Warm-pool driver: a pre-started sandbox that waits for one bash script and runs it in a bash
# started ahead of time. Protocol on fd 3: the driver says "R\n" when it waits; the server sends
# the job's length in bytes and "\n", then the job: an end mark, the script path and its
# arguments, each ended by a NUL; then end of file (its half-close, which the driver need not wait
# for: it reads fields until it has the length). Once the script has exited, the end mark goes on
# stdout and stderr after its output and its exit status back as "<status>\n", so the server need
# wait neither for the streams' end nor for the sandbox's exit.
#
# The bash that runs the script is started now and waits on a pipe, reading its commands from it:
# handing over the script's path and arguments costs ~0.7 ms where starting a bash costs ~1.5 ms
# (measured). It sources the script at its top level, so $0, $@, $$, BASH_SOURCE, FUNCNAME, exit
# statuses, signals and error messages are what `bash script` gives; only a top-level `return`
# differs (it ends the script, where bash would refuse it and go on), and $- has the s of a bash
# reading commands from standard input. None of this driver's variables reaches the script.
exec {script}> >(exec "$BASH" 3>&-)
runner=$!
printf '%s\n' '{ readarray -d "" job' 'exec </dev/null' '[ "${#job[@]}" -gt 0 ] || exit 0' \
  'set -- "${job[@]}"' 'unset job' 'BASH_ARGV0=$1' 'shift' '. "$0"' 'exit' '}' >&"$script"
LC_ALL=C # lengths in bytes (the runner started before: nothing of this reaches the script)
printf 'R\n' >&3 # waiting for the job
# Field by field up to its length: waiting for the end of file cost ~0.4 ms of a paced run (the
# server's half-close leaves once its event loop turns).
IFS= read -r -u 3 size || exit 0
job=()
got=0
while ((got < size)); do
  IFS= read -r -d '' -u 3 field || exit 0 # the pool shut down without a (whole) job
  job+=("$field")
  ((got += ${#field} + 1))
done
[ "${#job[@]}" -gt 1 ] || exit 0
# The script gets the real stderr; the driver's own (a job-status line like "Terminated" when the
# script dies of a signal) goes nowhere, as no such line appears when bash runs the script itself.
exec 4>&2 2>/dev/null
printf '%s\0' "${job[@]:1}" >&"$script"
exec {script}>&-
wait "$runner"
status=$?
mark=${job[0]}
if [ -z "$mark" ] || { printf '%s' "$mark" && printf '%s' "$mark" >&4; }; then
  exec 1>&- 4>&-
  printf '%s\n' "$status" >&3 2>/dev/null
fi
exit "$status"
