// A store opened from arbitrary bytes (a truncated copy, another program's SQLite file, random
// junk): open refuses it with bad_input, or every read export, compare and report make of it
// gives records or bad_input naming the damage. The bytes go to a file in a temporary directory
// made once; the store is opened read-only, as the readers open it.
#include "fourfold/core/error.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/store/run_state.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

std::string store_path() {
    static const std::string path = [] {
        char tmpl[] = "/tmp/fourfold-fuzz-XXXXXX";
        const char* dir = mkdtemp(tmpl);
        return std::string(dir ? dir : "/tmp") + "/store.db";
    }();
    return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fourfold;
    const auto path = store_path();
    unlink((path + "-wal").c_str());
    unlink((path + "-shm").c_str());
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    try {
        const auto s = store::result_store::open(path, store::open_mode::read_only);
        for (const auto& r : s.runs()) {
            (void)store::state_of(r);
            (void)s.records(r.id, true);
            (void)s.record_keys(r.id);
        }
        (void)store::list_runs(s);
        for (const auto format : {store::export_format::json, store::export_format::csv}) {
            std::ostringstream out;
            store::export_request request;
            request.format = format;
            request.with_samples = true;
            store::export_store(s, request, out);
        }
    } catch (const bad_input&) {
    } catch (const store::sqlite_error&) {
        // SQLite's own refusal of a damaged page, named with its code
    } catch (const std::runtime_error& e) {
        // "store changed under each read" cannot happen here: nothing else writes the file
        if (std::string(e.what()).find("changed under") != std::string::npos)
            std::abort();
    }
    return 0;
}
