# Warm-pool driver: a pre-started sandbox that waits for one bash script and runs a fresh bash on
# it. Protocol on fd 3: the driver says "R\n" when it waits; the server sends the job's length and
# "\n", then an end mark (unused here, and with the length it is job[0]), the script path and its
# arguments, NUL-separated; then end of file (its half-close), which bash reads up to. The
# script's exit status goes back as "<status>\n", so the server need not wait for the sandbox's
# exit.
printf 'R\n' >&3 # waiting for the job
readarray -d '' -u 3 job
[ "${#job[@]}" -gt 1 ] || exit 0
# The script gets the real stderr; the driver's own (a job-status line like "Terminated" when the
# script dies of a signal) goes nowhere, as no such line appears when bash runs the script itself.
exec 4>&2 2>/dev/null
"$BASH" "${job[@]:1}" 2>&4 3>&- 4>&-
status=$?
exec 1>&- 4>&-
printf '%s\n' "$status" >&3 2>/dev/null
exit "$status"
