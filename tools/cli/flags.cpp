#include "tools/cli/flags.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/trace/units.h"

namespace radixkv::tools {

namespace {

// CLI11's message names the flag first ("--trace: 1 required PATH missing"); the name is what
// stands before the first ": " or " was given".
std::string flag_in(const std::string& message) {
  const std::size_t end = std::min(message.find(": "), message.find(" was given"));
  std::string name = message.substr(0, end);
  if (!name.starts_with("-")) name = "--" + name;
  return name;
}

// A CLI11 parse error in radixkv's words; each names the flag.
UsageError usage_error(const CLI::ParseError& e, const std::string& command) {
  const std::string message = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // "The following argument(s) was/were not expected: --frobnicate x"
    const std::string extra = message.substr(message.find(": ") + 2);
    const std::string first = extra.substr(0, extra.find(' '));
    if (first.starts_with("-")) {
      return UsageError(fmt::format("unknown flag {} (see radixkv {} --help)",
                                    first.substr(0, first.find('=')), command));
    }
    return UsageError(fmt::format(
        "unexpected argument '{}' (flags start with --; see radixkv {} --help)", first, command));
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const std::string flag = flag_in(message);
    if (message.find("flag override") != std::string::npos) {
      return UsageError(fmt::format("{}: takes no value", flag));
    }
    if (message.find("At Most") != std::string::npos) {
      return UsageError(fmt::format("{}: given more than once", flag));
    }
    if (const std::size_t required = message.find(" required "); required != std::string::npos) {
      const std::size_t type = required + 10;
      return UsageError(fmt::format("{}: needs a value ({})", flag,
                                    message.substr(type, message.find(" missing") - type)));
    }
  }
  return UsageError(message);  // validation errors: "--flag: reason" already
}

}  // namespace

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.emplace_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

CommandLine::CommandLine(std::string_view command, std::string description)
    : command_(command), app_(std::move(description), fmt::format("radixkv {}", command)) {
  app_.set_help_flag("-h,--help", "show this help")->group("Flags");
  app_.get_formatter()->label("Usage", "usage");
  app_.get_formatter()->label("OPTIONS", "FLAGS");
  app_.get_formatter()->column_width(34);
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw)->group("Flags");
}

CLI::Option* CommandLine::add(CLI::Option* option, std::string_view value_name) {
  option->type_name(std::string(value_name));
  // A value that is itself a flag means the value was forgotten (`--trace --json`), and an empty
  // one (`--trace=`) is no value either.
  option->check(CLI::Validator(
      [value_name](std::string& value) -> std::string {
        if (value.empty()) return fmt::format("needs a value ({}), got an empty one", value_name);
        if (value.starts_with("--")) {
          return fmt::format("needs a value ({}), got the flag {}", value_name, value);
        }
        return {};
      },
      "", "value"));
  return option;
}

CLI::Option* CommandLine::text(std::string_view name, std::string& target,
                               std::string_view value_name, std::string_view help) {
  return add(app_.add_option(std::string(name), target, std::string(help)), value_name);
}

CLI::Option* CommandLine::texts(std::string_view name, std::vector<std::string>& target,
                                std::string_view value_name, std::string_view help) {
  CLI::Option* option =
      add(app_.add_option(std::string(name), target, std::string(help)), value_name);
  option->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  repeatable_.push_back(option);
  return option;
}

CLI::Option* CommandLine::count(std::string_view name, uint64_t& target,
                                std::string_view value_name, std::string_view help, uint64_t min,
                                uint64_t max) {
  CLI::Option* option =
      add(app_.add_option(std::string(name), target, std::string(help)), value_name);
  option->transform(CLI::Validator(
      [min, max](std::string& value) -> std::string {
        try {
          const uint64_t n = parse_count(value);
          if (n < min || n > max) return fmt::format("{} is outside [{}, {}]", value, min, max);
          value = std::to_string(n);
          return {};
        } catch (const UsageError& e) {
          return e.what();
        }
      },
      "", "count"));
  return option;
}

CLI::Option* CommandLine::size(std::string_view name, uint64_t& target, std::string_view help) {
  CLI::Option* option = add(app_.add_option(std::string(name), target, std::string(help)), "SIZE");
  option->transform(CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          value = std::to_string(parse_size(value));
          return {};
        } catch (const UsageError& e) {
          return e.what();
        }
      },
      "", "size"));
  return option;
}

CLI::Option* CommandLine::real(std::string_view name, double& target, std::string_view value_name,
                               std::string_view help, double min, double max) {
  CLI::Option* option =
      add(app_.add_option(std::string(name), target, std::string(help)), value_name);
  option->check(units_validator([min, max](const std::string& v) { parse_real(v, min, max); }));
  return option;
}

CLI::Option* CommandLine::flag(std::string_view name, bool& target, std::string_view help) {
  return app_.add_flag(std::string(name), target, std::string(help))->disable_flag_override();
}

bool CommandLine::parse(std::span<const std::string> args, std::ostream& out) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app_.help();
    return false;
  } catch (const CLI::ParseError& e) {
    throw usage_error(e, command_);
  }
  for (const CLI::Option* option : app_.get_options()) {
    // CLI11 lets a plain flag repeat; here nothing may.
    const bool repeatable =
        std::find(repeatable_.begin(), repeatable_.end(), option) != repeatable_.end();
    if (option->count() > 1 && !repeatable) {
      throw UsageError(fmt::format("{}: given more than once", option->get_name()));
    }
  }
  return true;
}

bool CommandLine::has_flag(std::string_view name) const {
  return app_.get_option_no_throw(std::string(name)) != nullptr;
}

bool CommandLine::given(std::string_view name) const {
  const CLI::Option* option = app_.get_option_no_throw(std::string(name));
  if (option == nullptr) throw std::logic_error(fmt::format("flag {} was never declared", name));
  return option->count() > 0;
}

bool CommandLine::given_on_command_line(std::string_view name) const {
  return given(name) && !origins_.contains(name);
}

void CommandLine::set_if_unset(std::string_view name, const std::string& value,
                               const std::string& origin) {
  CLI::Option* option = app_.get_option_no_throw(std::string(name));
  if (option == nullptr || name == "--help" || name == "--config") {
    throw UsageError(
        fmt::format("{}: {} is not a setting of radixkv {}", origin, name.substr(2), command_));
  }
  if (option->count() > 0) return;  // the command line wins
  try {
    option->add_result(value);
    option->run_callback();
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("{}: {}", origin, usage_error(e, command_).what()));
  }
  origins_.emplace(name, origin);
}

std::string CommandLine::describe(std::string_view name) const {
  const auto it = origins_.find(name);
  return it == origins_.end() ? std::string(name) : fmt::format("{} (from {})", name, it->second);
}

}  // namespace radixkv::tools
