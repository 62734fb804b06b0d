// A CUDA injection library: every kernel a process runs, with its start and end on the GPU's
// clock (CUPTI's concurrent-kernel activity records: the kernels of CUDA-graph replays included,
// each with its graph and node id, without serialising kernels, so a dependent launch's overlap
// with the kernel before it stays in the figures). Written at the process's exit as one
// tab-separated file; bench/gpu/timeline_table.py turns one decode step's replays into what each
// kernel adds to the step inside the graph (ncu times each kernel alone, with no overlap).
//
//   g++ -std=c++20 -O2 -shared -fPIC -I<cupti include> bench/gpu/kernel_timeline.cpp
//       -L<cupti lib> -lcupti -Wl,-rpath,<cupti lib> -o libkernel_timeline.so
//   CUDA_INJECTION64_PATH=$PWD/libkernel_timeline.so FOURFOLD_TIMELINE=/out/tl fourfold decode ...
//
// The driver loads the library in every process that initialises CUDA (fourfold's job processes
// included) and calls InitializeInjection; each such process writes /out/tl.<pid>.tsv. Columns:
// start_ns, end_ns, graph_id, graph_node_id, stream, grid (blocks), block (threads), dynamic
// shared bytes, registers a thread, name (demangled, without its parameter list). A bench tool,
// not part of fourfold: the stage s49_timeline builds and uses it (bench/gpu/stages/session.sh).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cupti.h>
#include <cxxabi.h>
#include <mutex>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

struct kernel_span {
    std::uint64_t start, end, node;
    std::uint32_t graph, stream;
    std::int32_t grid, block, smem;
    std::uint16_t registers;
    std::uint32_t name; // index into the names
};

struct trace {
    std::mutex mutex;
    std::vector<kernel_span> spans;
    std::vector<std::string> names;
    std::unordered_map<const char*, std::uint32_t> name_index; // CUPTI's shared name strings
    std::size_t dropped = 0;
    std::string out;
};
trace* g_trace = nullptr; // never freed: written at exit, after which nothing is recorded

constexpr std::size_t k_buffer_bytes = std::size_t{16} << 20;

void report(const char* what, CUptiResult r) {
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    std::fprintf(stderr, "kernel_timeline: %s: %s\n", what, text ? text : "unknown error");
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, k_buffer_bytes));
    *size = *buffer ? k_buffer_bytes : 0;
    *max = 0; // as many records as fit
}

std::uint32_t name_of(trace& t, const char* mangled) {
    const auto it = t.name_index.find(mangled);
    if (it != t.name_index.end())
        return it->second;
    std::string name = mangled ? mangled : "?";
    int status = 0;
    char* plain = mangled ? abi::__cxa_demangle(mangled, nullptr, nullptr, &status) : nullptr;
    if (plain && status == 0) {
        name = plain;
        // drop the parameter list: the '(' that matches the name's last ')'
        if (!name.empty() && name.back() == ')') {
            int depth = 0;
            for (std::size_t i = name.size(); i-- > 0;) {
                depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
                if (depth == 0) {
                    name.resize(i);
                    break;
                }
            }
        }
        if (name.rfind("void ", 0) == 0)
            name.erase(0, 5);
    }
    std::free(plain);
    for (char& c : name)
        if (c == '\t' || c == '\n')
            c = ' ';
    const auto index = static_cast<std::uint32_t>(t.names.size());
    t.names.push_back(std::move(name));
    t.name_index.emplace(mangled, index);
    return index;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                               std::size_t, std::size_t valid) {
    {
        std::lock_guard<std::mutex> lock(g_trace->mutex);
        CUpti_Activity* record = nullptr;
        while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
            if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
                record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
                continue;
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            g_trace->spans.push_back({k->start, k->end, k->graphNodeId, k->graphId, k->streamId,
                                      k->gridX * k->gridY * k->gridZ,
                                      k->blockX * k->blockY * k->blockZ, k->dynamicSharedMemory,
                                      k->registersPerThread, name_of(*g_trace, k->name)});
        }
        std::size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
            g_trace->dropped += dropped;
    }
    std::free(buffer);
}

void write_at_exit() {
    const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS)
        report("cuptiActivityFlushAll", r);
    std::lock_guard<std::mutex> lock(g_trace->mutex);
    if (g_trace->spans.empty())
        return;
    FILE* f = std::fopen(g_trace->out.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "kernel_timeline: cannot write %s: %s\n", g_trace->out.c_str(),
                     std::strerror(errno));
        return;
    }
    std::fprintf(f,
                 "start_ns\tend_ns\tgraph_id\tgraph_node_id\tstream\tgrid\tblock\tsmem\tregisters"
                 "\tname\n");
    for (const auto& s : g_trace->spans)
        std::fprintf(f, "%llu\t%llu\t%u\t%llu\t%u\t%d\t%d\t%d\t%u\t%s\n",
                     static_cast<unsigned long long>(s.start),
                     static_cast<unsigned long long>(s.end), s.graph,
                     static_cast<unsigned long long>(s.node), s.stream, s.grid, s.block, s.smem,
                     static_cast<unsigned>(s.registers), g_trace->names[s.name].c_str());
    std::fclose(f);
    std::fprintf(stderr, "kernel_timeline: %zu kernels (%zu records dropped) -> %s\n",
                 g_trace->spans.size(), g_trace->dropped, g_trace->out.c_str());
}

} // namespace

// Called by the CUDA driver at its initialisation when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection(void) {
    if (g_trace)
        return 1;
    const char* base = std::getenv("FOURFOLD_TIMELINE");
    g_trace = new trace;
    g_trace->out = std::string(base && *base ? base : "kernel_timeline") + "." +
                   std::to_string(static_cast<long>(getpid())) + ".tsv";
    std::uint32_t version = 0;
    if (cuptiGetVersion(&version) == CUPTI_SUCCESS && version < CUPTI_API_VERSION)
        std::fprintf(stderr, "kernel_timeline: CUPTI %u is older than the header's %d\n", version,
                     CUPTI_API_VERSION);
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        report("cuptiActivityRegisterCallbacks", r);
        return 0;
    }
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        report("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
        return 0;
    }
    std::atexit(write_at_exit);
    return 1;
}
