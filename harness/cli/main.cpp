// musespark: the harness's command-line tool.
#include <exception>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"musespark: correctness and performance harness for the MuseSpark1x MoE router"};
  app.require_subcommand(1);
  int exit_code = 0;
  musespark::cli::add_check_command(app, exit_code);
  musespark::cli::add_fuzz_commands(app, exit_code);
  musespark::cli::add_loader_commands(app, exit_code);
  musespark::cli::add_path_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "musespark: error: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}
