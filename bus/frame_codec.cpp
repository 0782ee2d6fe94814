// The packed form of a message, and printable frames for logs; the rest of the shared codec
// pieces are inline in the header.
#include "bus/frame_codec.hpp"

#include <utility>

#include "schema/protocol.hpp"

namespace glassbox::bus {

void append_packed_field(std::string& envelope, std::string_view field) {
    std::size_t length = field.size();
    while (length >= 0x80) {
        envelope.push_back(static_cast<char>(0x80 | (length & 0x7F)));
        length >>= 7;
    }
    envelope.push_back(static_cast<char>(length));
    envelope.append(field);
}

namespace {

template <typename Container>
std::string envelope_of(const Container& frames, std::size_t first) {
    std::size_t size = 1;
    for (std::size_t i = first + 1; i + 1 < frames.size(); ++i) size += frames[i].size() + 2;
    std::string envelope;
    envelope.reserve(size);
    envelope.push_back(kPackedVersion);
    for (std::size_t i = first + 1; i + 1 < frames.size(); ++i) {
        if constexpr (std::is_same_v<typename Container::value_type, zmq::message_t>) {
            append_packed_field(envelope, view_of(frames[i]));
        } else {
            append_packed_field(envelope, frames[i]);
        }
    }
    return envelope;
}

}  // namespace

std::string pack_envelope(const std::vector<zmq::message_t>& frames, std::size_t first) {
    return envelope_of(frames, first);
}

std::string pack_envelope(const std::vector<std::string>& frames, std::size_t first) {
    return envelope_of(frames, first);
}

void pack_messages(std::vector<zmq::message_t>& frames, std::size_t first) {
    if (frames.size() < first + 3) return;
    const std::string envelope = envelope_of(frames, first);
    zmq::message_t last = std::move(frames.back());
    frames.resize(first);
    frames.emplace_back(envelope.data(), envelope.size());
    frames.push_back(std::move(last));
}

void pack_frames(std::vector<std::string>& frames, std::size_t first) {
    if (frames.size() < first + 3) return;
    std::string envelope = envelope_of(frames, first);
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
        if (length > envelope.size() - at) return frame_error("packed envelope: field past its end");
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
