#pragma once
// The one channel between an isolated job's process and the parent that owns the store: a pipe
// of length-framed JSON. A frame is a 4-byte little-endian length, then that many bytes of one
// JSON object. Nothing else crosses: no shared memory the child could corrupt. A frame that is
// too long, not JSON or not an object is a broken channel, reported as such, never a crash.
#include "fourfold/core/json.hpp"
#include "fourfold/core/record.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::runner {

// The longest frame either side accepts: a record with every sample of a long job fits many
// times over; a length beyond it is a broken channel.
inline constexpr std::uint32_t k_max_frame_bytes = 64u << 20;

// The bytes of one frame holding `message`.
std::string encode_frame(const json& message);

// Writes one frame to `fd` whole (retrying short writes and EINTR); false when the reader is
// gone (EPIPE) or the write fails.
bool write_frame(int fd, const json& message);

// Accumulates bytes read from a pipe and cuts them into frames.
class frame_reader {
  public:
    // Appends bytes as they arrive.
    void feed(std::string_view bytes);
    // The next whole frame, if one is buffered. Sets error() and returns nullopt for a frame
    // that is too long, not JSON or not an object; once broken, the reader stays broken.
    std::optional<json> next();
    const std::string& error() const { return m_error; }
    // Bytes buffered that do not yet make a frame (a child that died mid-frame leaves some).
    std::size_t pending() const { return m_buffer.size() - m_at; }

  private:
    std::string m_buffer;
    std::size_t m_at = 0;
    std::string m_error;
};

// A record as the channel carries it, and back. record_from_json throws std::invalid_argument
// naming what is missing or wrong.
json record_to_json(const record& r);
record record_from_json(const json& j);

} // namespace fourfold::runner
