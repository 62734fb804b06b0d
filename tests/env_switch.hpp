#pragma once
// A switch a plan reads from the environment (a session's trial path), set for a scope and unset
// again when the scope ends, however it ends (a failed ASSERT returns from the test): no later
// test of the same process sees it.
#include <cstdlib>
#include <string>
#include <utility>

namespace fourfold::testing {

class env_switch {
  public:
    explicit env_switch(std::string name) : m_name(std::move(name)) { unset(); }
    env_switch(std::string name, const char* value) : m_name(std::move(name)) { set(value); }
    ~env_switch() { unset(); }
    env_switch(const env_switch&) = delete;
    env_switch& operator=(const env_switch&) = delete;
    env_switch(env_switch&&) = delete;
    env_switch& operator=(env_switch&&) = delete;

    void set(const char* value) const { ::setenv(m_name.c_str(), value, 1); }
    void unset() const { ::unsetenv(m_name.c_str()); }

  private:
    std::string m_name;
};

} // namespace fourfold::testing
