// The worker's subcommands. Each takes the arguments after the command name and
// returns the process exit status; bad usage throws UsageError, other failures
// std::exception with a message for the operator.
#pragma once

#include <string>
#include <vector>

namespace sy::cli {

int run_tokenize(const std::vector<std::string>& args);
int run_chat_prompt(const std::vector<std::string>& args);  // chat_command.cpp: the `chat` command
int run_eval(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_make_model(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);  // serve.cpp

}  // namespace sy::cli
