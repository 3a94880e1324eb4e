// The one doctest main shared by every test executable. Besides running doctest, it keeps the
// promises that ctest and scripts/check-tests.sh rely on:
//  - a run (not a query such as --count or --list-test-cases) that starts no test case fails and
//    says which filters matched nothing: a ctest entry that tests nothing is not a pass;
//  - a run whose every started case called RADIXKV_SKIP (tests/skip.h), with no failure, exits
//    with RADIXKV_TEST_SKIP_CODE, which ctest reports as "Skipped" (SKIP_RETURN_CODE);
//  - every run ends with the line "[radixkv cases] ran=N skipped=S", which the guard reads back
//    from ctest's log;
//  - --list-test-cases, which ctest's discovery runs after each build, fails on a test case name
//    that holds ';': the discovery would split it into two filters that match nothing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/skip.h"

namespace {

// What the listener saw during Context::run().
struct Tally {
  bool ran = false;  // test_run_start was called: a run, not a query
  int started = 0;   // test cases started (a case re-entered for its subcases counts once)
  int skipped = 0;   // of those, the ones that called RADIXKV_SKIP
  const doctest::TestCaseData* current = nullptr;
  bool current_skipped = false;
  std::vector<std::string> names_with_semicolon;  // from --list-test-cases
};

Tally& tally() {
  static Tally t;
  return t;
}

struct CaseCounter : doctest::IReporter {
  explicit CaseCounter(const doctest::ContextOptions&) {}

  void report_query(const doctest::QueryData& query) override {
    for (unsigned i = 0; i < query.num_data; ++i) {
      const char* name = query.data[i]->m_name;
      if (std::strchr(name, ';') != nullptr) tally().names_with_semicolon.emplace_back(name);
    }
  }
  void test_run_start() override { tally().ran = true; }
  void test_case_start(const doctest::TestCaseData& test) override {
    ++tally().started;
    tally().current = &test;
    tally().current_skipped = false;
  }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (tally().current_skipped) ++tally().skipped;
    tally().current = nullptr;
  }

  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("radixkv_case_counter", 1, CaseCounter);

std::string arguments(int argc, char** argv) {
  std::string joined;
  for (int i = 1; i < argc; ++i) joined += std::string(joined.empty() ? "" : " ") + argv[i];
  return joined.empty() ? "(none)" : joined;
}

}  // namespace

namespace radixkv::testing {

void skip_current_test_case(const std::string& reason) {
  Tally& t = tally();
  if (t.current == nullptr) throw std::logic_error("RADIXKV_SKIP used outside a test case");
  t.current_skipped = true;
  std::cout << "[radixkv skipped] " << t.current->m_name << ": " << reason << std::endl;
}

}  // namespace radixkv::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  const Tally& t = tally();

  if (!t.names_with_semicolon.empty()) {
    for (const std::string& name : t.names_with_semicolon) {
      std::cerr << "[radixkv] test case name holds ';': \"" << name << "\"\n";
    }
    std::cerr << "[radixkv] ctest's doctest discovery splits a name at ';' into filters that match "
                 "no test case; rename the test case(s) above\n";
    return 1;
  }
  if (!t.ran) return status;  // --count, --list-test-cases, --help, ...

  std::cout << "[radixkv cases] ran=" << t.started << " skipped=" << t.skipped << std::endl;
  if (status != 0) return status;
  if (t.started == 0) {
    std::cerr << "[radixkv] no test case ran: the arguments " << arguments(argc, argv)
              << " match none of this program's test cases (see --list-test-cases); a run that "
                 "tests nothing fails\n";
    return 1;
  }
  if (t.skipped == t.started) return RADIXKV_TEST_SKIP_CODE;
  return 0;
}
