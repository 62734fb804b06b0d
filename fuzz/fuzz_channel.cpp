// The isolation channel from arbitrary bytes: what a dying or corrupted job process could send.
// The reader must cut frames, refuse bad ones with a message, and record_from_json must either
// give a record or throw std::invalid_argument; nothing else.
#include "fourfold/runner/channel.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fourfold::runner;
    frame_reader reader;
    // fed in two pieces, cut where the first byte says: frames split across reads
    const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
    const auto* chars = reinterpret_cast<const char*>(data);
    reader.feed(std::string_view(chars, cut));
    for (int round = 0; round < 2; ++round) {
        while (auto frame = reader.next()) {
            const auto it = frame->find("r");
            if (it == frame->end())
                continue;
            try {
                const auto r = record_from_json(*it);
                // what the parent does with it: its key, and the frame it would be again
                (void)r.job.key();
                (void)encode_frame(record_to_json(r));
            } catch (const std::invalid_argument&) {
            } catch (const std::length_error&) {
            }
        }
        if (round == 0)
            reader.feed(std::string_view(chars + cut, size - cut));
    }
    return 0;
}
