// Subcommands of the `musespark` tool; each registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace musespark::cli {

// `musespark check`: every available implementation against the reference
// over the deterministic grid; exit status 1 when a gating one fails.
void add_check_command(CLI::App& app, int& exit_code);

// `musespark fuzz`, `replay`, `export`, `verify`: random cases until
// something breaks, shrunk reproducers as case files, and the judging of
// outside implementations through case files.
void add_fuzz_commands(CLI::App& app, int& exit_code);

// `musespark inspect`, `generate-checkpoint`, `load`: the expert loader.
void add_loader_commands(CLI::App& app, int& exit_code);

// `musespark path`: which path of the CUDA kernel each call shape takes,
// from its tier table, without a GPU.
void add_path_command(CLI::App& app, int& exit_code);

}  // namespace musespark::cli
