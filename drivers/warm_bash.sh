# Warm-pool driver: a pre-started sandbox that waits for one bash script and execs a fresh bash
# on it. Protocol on fd 3: the script path and its arguments, NUL-separated, then end of file.
readarray -d '' -u 3 job
exec 3<&-
[ "${#job[@]}" -gt 0 ] || exit 0
exec "$BASH" "${job[@]}"
