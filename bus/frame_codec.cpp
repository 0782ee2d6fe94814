// The packed form of a message, and printable frames for logs; the rest of the shared codec
// pieces are inline in the header.
#include "bus/frame_codec.hpp"

#include <cstring>
#include <utility>

#include "bus/detail/frame_io.hpp"
#include "schema/protocol.hpp"

namespace glassbox::bus {

namespace {

// LEB128: 7 bits a byte, low first, the high bit set on every byte but the last.
std::size_t length_size(std::size_t length) noexcept {
    std::size_t bytes = 1;
    for (; length >= 0x80; length >>= 7) ++bytes;
    return bytes;
}

char* put_field(char* at, std::string_view field) noexcept {
    std::size_t length = field.size();
    for (; length >= 0x80; length >>= 7) *at++ = static_cast<char>(0x80 | (length & 0x7F));
    *at++ = static_cast<char>(length);
    if (!field.empty()) std::memcpy(at, field.data(), field.size());
    return at + field.size();
}

std::string_view field_of(const zmq::message_t& frame) noexcept { return view_of(frame); }
std::string_view field_of(const std::string& frame) noexcept { return frame; }

// The envelope of frames first+1 .. size-2, written once into a buffer of its exact size.
template <typename Container>
std::size_t envelope_size(const Container& frames, std::size_t first) noexcept {
    std::size_t size = 1;
    for (std::size_t i = first + 1; i + 1 < frames.size(); ++i) {
        size += length_size(frames[i].size()) + frames[i].size();
    }
    return size;
}
template <typename Container>
void write_envelope(const Container& frames, std::size_t first, char* at) noexcept {
    *at++ = kPackedVersion;
    for (std::size_t i = first + 1; i + 1 < frames.size(); ++i)
        at = put_field(at, field_of(frames[i]));
}

}  // namespace

base::Result<char> decode_command_head(const FrameViews& frames, std::string_view protocol) {
    if (frames.size() < 3 || !frames[0].empty() || frames[1] != protocol || frames[2].size() != 1) {
        return frame_error(std::string{protocol} + " message without a command");
    }
    return frames[2][0];
}

void append_packed_field(std::string& envelope, std::string_view field) {
    const std::size_t at = envelope.size();
    envelope.resize(at + length_size(field.size()) + field.size());
    put_field(envelope.data() + at, field);
}

void pack_messages(Messages& frames, std::size_t first) {
    if (frames.size() < first + 3) return;
    zmq::message_t envelope(envelope_size(frames, first));
    write_envelope(frames, first, static_cast<char*>(envelope.data()));
    zmq::message_t last = std::move(frames.back());
    frames.resize(first);
    frames.push_back(std::move(envelope));
    frames.push_back(std::move(last));
}

void pack_frames(std::vector<std::string>& frames, std::size_t first) {
    if (frames.size() < first + 3) return;
    std::string envelope(envelope_size(frames, first), '\0');
    write_envelope(frames, first, envelope.data());
    std::string last = std::move(frames.back());
    frames.resize(first);
    frames.push_back(std::move(envelope));
    frames.push_back(std::move(last));
}

base::Result<void> unpack_views(std::string_view envelope, std::string_view last, FrameViews& out) {
    out.clear();
    if (envelope.empty() || envelope[0] != kPackedVersion) {
        return frame_error("packed envelope: unknown version");
    }
    out.emplace_back();  // the empty delimiter the packed form leaves out
    std::size_t at = 1;
    while (at < envelope.size()) {
        std::size_t length = 0;
        int shift = 0;
        for (;;) {
            if (at >= envelope.size() || shift > 28) {
                return frame_error("packed envelope: truncated field length");
            }
            const auto byte = static_cast<unsigned char>(envelope[at++]);
            length |= static_cast<std::size_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) break;
            shift += 7;
        }
        if (length > envelope.size() - at)
            return frame_error("packed envelope: field past its end");
        if (out.size() + 1 >= schema::protocol::kMaxFrames) {
            return frame_error("packed envelope: too many fields");
        }
        out.push_back(envelope.substr(at, length));
        at += length;
    }
    if (out.size() < 2) return frame_error("packed envelope: no field");
    out.push_back(last);
    return {};
}

base::Result<void> unpack_frames(std::vector<std::string>& frames) {
    if (frames.empty() || !is_packed(frames[0])) return {};
    if (frames.size() != 2) return frame_error("packed message: not two frames");
    FrameViews views;
    if (auto unpacked = unpack_views(frames[0], frames[1], views); !unpacked) return unpacked;
    // The fields are copied out of the envelope; the last frame (a body, maybe large) moves.
    std::vector<std::string> classic;
    classic.reserve(views.size());
    for (std::size_t i = 0; i + 1 < views.size(); ++i) classic.emplace_back(views[i]);
    classic.push_back(std::move(frames[1]));
    frames = std::move(classic);
    return {};
}

std::string printable(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x21 && byte <= 0x7E && c != '\\') {
            out.push_back(c);
        } else {
            out.push_back('\\');
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0xF]);
        }
    }
    return out;
}

}  // namespace glassbox::bus
