# codexec session driver for Bash: one persistent shell; cwd, variables and functions persist.
#
# Protocol on fd 3 (moved to a high fd at start-up so scripts may use fd 3 themselves): frames
# of `<byte length in decimal>\n<UTF-8 JSON>`. In: {"type":"exec","id":"...","mark":"...",
# "code":"..."} with the keys in that order (the server writes them so; mark is optional: written
# on stdout and stderr as "\n<mark>\n" after the cell, so the server knows its output is all in; once,
# on stdout, under pty_relay.py, where both are one terminal). Out: {"type":"ready"} once, then
# {"type":"done","id":...,"status":...,"exit_code":N} after each cell. User output never
# travels on the control channel.
#
# Each cell is sourced at top level (so `declare` makes globals), from a here-string. On SIGINT
# the trap arms a DEBUG trap that, with extdebug, makes every sourced script and function
# return at its next command: the cell unwinds and the shell survives with its state.

exec {__codexec_ctl}<&3
# The real stdout and stderr, whatever a cell does to fds 1 and 2: marks go there.
exec {__codexec_out}>&1 {__codexec_err}>&2
# Under pty_relay.py (CODEXEC_PTY=1) stdin is the terminal, and stdout and stderr are one stream.
__codexec_pty=${CODEXEC_PTY-}
unset CODEXEC_PTY
# stdin stays the session's: code that reads it waits for input (the server sees it and says so).
exec 3<&-
shopt -s extdebug
set -o functrace

__codexec_unwind() {
  if [[ ${FUNCNAME[*]} == *source* ]]; then return 2; fi
  return 0
}
__codexec_sigint() {
  __codexec_interrupted=1
  trap '__codexec_unwind' DEBUG
}
__codexec_send() {
  printf '%d\n%s' "${#1}" "$1" >&"$__codexec_ctl"
}

__codexec_send "{\"type\":\"ready\",\"pid\":$$,\"version\":\"${BASH_VERSION}\"}"
while LC_ALL=C IFS= read -r -u "$__codexec_ctl" __codexec_len \
  && LC_ALL=C IFS= read -r -N "$__codexec_len" -u "$__codexec_ctl" __codexec_frame; do
  [[ $__codexec_frame =~ ^\{\"type\":\"exec\",\"id\":\"([A-Za-z0-9_]+)\",(\"mark\":\"([][A-Za-z0-9 _-]*)\",)?\"code\":\"(.*)\"\}$ ]] || continue
  __codexec_id=${BASH_REMATCH[1]}
  __codexec_mark=${BASH_REMATCH[3]}
  __codexec_code=${BASH_REMATCH[4]}
  # JSON string → text: \" becomes \x22, then printf %b decodes \\ \n \t \r \b \f \uXXXX.
  __codexec_code=${__codexec_code//\\\"/\\x22}
  printf -v __codexec_code '%b' "$__codexec_code"
  __codexec_interrupted=
  trap - DEBUG
  # bash's own read of stdin resumes after a trap; return (a longjmp) ends it, and the cell.
  trap '__codexec_sigint; [[ ${FUNCNAME[*]} != *source* ]] || return 130' INT
  # The cell's stdin stays the session's: its code comes on an fd of its own.
  exec {__codexec_cell}<<<"$__codexec_code"
  . "/dev/fd/$__codexec_cell"
  __codexec_status=$?
  exec {__codexec_cell}<&-
  trap - DEBUG
  trap '' INT
  if [[ -n $__codexec_mark ]]; then
    printf '\n%s\n' "$__codexec_mark" >&"$__codexec_out" 2>/dev/null
    [[ -n $__codexec_pty ]] || printf '\n%s\n' "$__codexec_mark" >&"$__codexec_err" 2>/dev/null
  fi
  if [[ -n $__codexec_interrupted ]]; then
    __codexec_send "{\"type\":\"done\",\"id\":\"$__codexec_id\",\"status\":\"interrupted\",\"exit_code\":130}"
  else
    __codexec_state=ok
    ((__codexec_status == 0)) || __codexec_state=error
    __codexec_send "{\"type\":\"done\",\"id\":\"$__codexec_id\",\"status\":\"$__codexec_state\",\"exit_code\":$__codexec_status}"
  fi
done
exit 0
