// Every argument error in the project is an ArgumentError whose message names
// the argument and the value it got.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace musespark {

class ArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A CUDA launch or runtime failure, carrying the CUDA error name.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ArgumentError "<context>: <parts...>", the parts streamed in order.
template <typename... Parts>
[[noreturn]] void throw_argument_error(std::string_view context, const Parts&... parts) {
  std::ostringstream os;
  os << context << ": ";
  (os << ... << parts);
  throw ArgumentError(os.str());
}

}  // namespace musespark
