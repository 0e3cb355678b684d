// The main() of every kvplan test executable (instead of gtest_main): each test process gets its
// own temporary folder, named in TEST_TMPDIR (what ::testing::TempDir() returns) and TMPDIR (what
// std::filesystem::temp_directory_path() and the kvplan processes a test starts use), and removes
// it with everything in it when the process ends. The suite leaves nothing in the system's
// temporary folder, and parallel test processes never share a file name.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") + "/kvplan-test-XXXXXX";
  std::string dir;
  if (mkdtemp(pattern.data()) != nullptr) {
    dir = pattern;
    setenv("TEST_TMPDIR", (dir + "/").c_str(), 1);
    setenv("TMPDIR", dir.c_str(), 1);
  } else {
    std::cerr << "test_main: cannot create a temporary folder under " << pattern << "; using the system's\n";
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return status;
}
