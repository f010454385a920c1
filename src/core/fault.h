// Fault injection for the kill-and-resume tests (tests/cli/robustness_test.cc): a named
// point in a long operation where the process can be made to die as a SIGKILL would,
// leaving exactly what a real kill leaves.
//
// fault_point(name) does nothing unless the environment variable FXT_FAULT is
// "<name>" or "<name>:<n>"; it then kills the process with SIGKILL on the n-th time
// (default 1) the point is reached. Reading the variable once costs a getenv per call.
#pragma once

namespace fxt {

void fault_point(const char* name);

}  // namespace fxt
