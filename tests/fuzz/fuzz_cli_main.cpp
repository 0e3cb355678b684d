// The kvplan CLI's main(), compiled under another name for fuzz_cli_args.
#define main kvplan_cli_main
#include "../../cli/main.cpp"
