/** Every tool codexec can register, for CODEXEC_TOOLS (a comma list names some of these). */
export const TOOL_NAMES = [
  'execute_code',
  'execute_command',
  'start_session',
  'send_to_session',
  'close_session',
  'kill_session',
  'list_sessions',
  'start_process',
  'read_process_output',
  'write_stdin',
  'kill_process',
  'list_processes',
  'save_script',
  'get_script',
  'list_scripts',
  'search_scripts',
  'run_script',
  'install_package',
  'search_execution_logs',
  'get_execution_log',
  'write_file',
  'read_file',
  'health',
] as const;

/** CODEXEC_TOOLS=codemode: the tool that runs code (which calls other servers' tools) and health. */
export const CODEMODE_TOOLS = ['execute_code', 'health'] as const;
