// Every argument error in the project is an ArgumentError whose message names
// the argument and the value it got.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace musespark
