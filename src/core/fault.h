// Fault injection for the kill-and-resume tests (tests/cli/robustness_test.cc): a named
// point in a long operation where the process can be made to die as a SIGKILL would,
// leaving exactly what a real kill leaves.
//
// fault_point(name) does nothing unless the environment variable FXT_FAULT is
// "<name>", "<name>:<n>" or "<name>:<n>:TERM" (or ":INT"); it then sends the process
// SIGKILL (or that signal) on the n-th time (default 1) the point is reached. FXT_FAULT is
// read once per process; a call costs a load and a compare, so points may sit in per-step or
// per-block loops (not per record).
#pragma once

namespace fxt {

void fault_point(const char* name);

}  // namespace fxt
