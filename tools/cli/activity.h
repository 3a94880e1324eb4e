// What the command line is doing right now, so that running out of memory ends with a message
// naming it ("radixkv replay: out of memory while reading the trace big.jsonl") and exit status 1,
// never with an abort and an empty stderr.
//
// Two ways memory runs out, one message:
//   - operator new finds no memory: the handler main() installs (std::set_new_handler) prints the
//     message and exits. It must: mimalloc 2.0's operator new, which the binary uses, aborts when
//     no handler is installed, and it is C code an exception may not cross.
//   - something throws std::bad_alloc (radixkv's own heap, kv_store/heap.h, throws it when
//     mi_malloc returns null): run_cli catches it and prints the same message.
// The description lives in a fixed buffer, so the handler prints it without allocating.
#pragma once

#include <string>
#include <string_view>

namespace radixkv::tools {

// Sets what is being done (truncated to a few hundred bytes) for as long as the scope lives; the
// previous description comes back after it.
class Activity {
 public:
  explicit Activity(std::string_view what);
  ~Activity();
  Activity(const Activity&) = delete;
  Activity& operator=(const Activity&) = delete;

 private:
  std::string previous_;
};

// "radixkv <command>: out of memory while <activity>" (or "... out of memory" when idle).
std::string out_of_memory_message();
// Names the command in the message ("replay"); run_cli sets it.
void set_command_name(std::string_view command);
// The new-handler: writes the message to stderr and exits with status 1.
[[noreturn]] void exit_out_of_memory() noexcept;

}  // namespace radixkv::tools
