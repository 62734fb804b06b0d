// `fourfold run --python FILE.py --workload NAME ...`: the run of a workload defined in Python.
// The CLI does not embed an interpreter: it replaces itself (execv) with the Python the package
// was built for, running `python3 -m fourfold run` with the same arguments. That run is
// fourfold.run, the same engine linked into fourfold._native, so the CLI keeps no dependency on
// libpython and a Python workload has one code path whichever way it is started.
#include "fourfold/core/files.hpp"
#include "fourfold/runner/isolation.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fourfold::cli {

// Whether argv is `run ... --python ...`.
bool wants_python_run(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) != "run")
        return false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--python" || a.rfind("--python=", 0) == 0)
            return true;
    }
    return false;
}

int python_run_command(int argc, char** argv) {
    // the package sits beside this binary: build/python/fourfold, with the interpreter it was
    // built for named in its INTERPRETER file (python/CMakeLists.txt writes both)
    const auto exe = runner::this_executable();
    const auto dir = exe.substr(0, exe.find_last_of('/'));
    const auto pkg = dir + "/python";
    std::string interpreter;
    if (const char* given = std::getenv("FOURFOLD_PYTHON"); given && *given)
        interpreter = given;
    else if (std::ifstream f(pkg + "/fourfold/INTERPRETER"); f)
        std::getline(f, interpreter);
    if (interpreter.empty() || !path_exists(pkg + "/fourfold/__init__.py")) {
        std::fprintf(stderr,
                     "fourfold: error: run --python: this fourfold was built without its Python "
                     "package (%s/fourfold is missing: configure with pybind11-dev, python3-dev "
                     "and python3-torch installed, or set FOURFOLD_PYTHON)\n",
                     pkg.c_str());
        return 2;
    }
    std::string path = pkg;
    if (const char* old = std::getenv("PYTHONPATH"); old && *old)
        path += std::string(":") + old;
    setenv("PYTHONPATH", path.c_str(), 1);
    std::vector<std::string> args{interpreter, "-m", "fourfold"};
    for (int i = 1; i < argc; ++i)
        args.emplace_back(argv[i]);
    std::vector<char*> raw;
    raw.reserve(args.size() + 1);
    for (auto& a : args)
        raw.push_back(a.data());
    raw.push_back(nullptr);
    std::fflush(stdout);
    execv(interpreter.c_str(), raw.data());
    std::fprintf(stderr, "fourfold: error: run --python: cannot start %s: %s\n",
                 interpreter.c_str(), std::strerror(errno));
    return 3;
}

} // namespace fourfold::cli
