// Which store requests a worker slot runs inline (runtime::WorkerConfig::run_inline): the reads
// that answer in a millisecond or so, read from the body's "op" without parsing the body.
#pragma once

#include <cstddef>
#include <string_view>

namespace glassbox::store {

// Bodies above this many bytes go to the handler thread whatever their op: reading them is
// work of its own.
inline constexpr std::size_t kInlineBodyMax = std::size_t{256} * 1024;

// True for a body of at most kInlineBodyMax bytes
// whose top-level "op" is one of the bounded indexed reads: triples-batch, entities,
// entities-batch, chunks-vector, chunks-keyword, chunks-hybrid, chunks-fetch, fact-sources,
// labels. False for everything else: the writes (load-triples, staged loads, load-documents,
// index, collection-delete: long, and index calls the embeddings service), `triples` (streams
// up to max_stream_bytes), `stats` (counts over every quad of the collection), `collections`
// (opens and counts every collection), and any body it cannot read at once (no "op" found
// before the first value it cannot skip, an escaped key, text that is not a JSON object, a
// second "op" or a \u escape after the first "op"): the handler thread answers those as always.
bool is_quick_read(std::string_view body) noexcept;

// The store's runtime::WorkerConfig::run_inline: a quick read (is_quick_read), while no other
// request of this process is running or waiting (a LongRequest). A quick read waits for its
// collection's lock, and an inline one does so without heartbeats: behind a long load-commit
// (~2.5 s of CPU per million staged triples) it would go silent past the broker's liveness, so
// while one runs the reads go to the handler threads, which keep heartbeating. (A long request
// that starts between this check and the read's lock can still hold it up: a window of
// microseconds; the broker then applies guarantee 2 to the read.) `meta` is not read.
bool runs_inline(std::string_view meta, std::string_view body) noexcept;

// Marks a request that is not a quick read as running in this process for its lifetime (the
// store's handler holds one around each request; a quick read's marks nothing).
class LongRequest {
public:
    explicit LongRequest(std::string_view body) noexcept;
    ~LongRequest();
    LongRequest(const LongRequest&) = delete;
    LongRequest& operator=(const LongRequest&) = delete;

private:
    bool counted_;
};

}  // namespace glassbox::store
