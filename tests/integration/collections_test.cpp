// `glassbox collections list|show|delete` end to end: a real broker, store and embeddings worker,
// collections loaded from ops/sample, and what a delete leaves (nothing) and refuses.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

// Runs `argv` on a pseudo-terminal (Python's pty), answering `answer` to the first "[y/N]"
// prompt; prints what the terminal showed and exits with the command's code.
constexpr const char* kOnATerminal = R"py(
import os, pty, sys
answer, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out, sent = b"", False
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if not sent and b"[y/N]" in out:
        os.write(fd, (answer + "\n").encode())
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
)py";

class CollectionsTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_workers(broker_.endpoint, {{"embeddings"}, {"store", {"--home", home().string()}}});
    }

    fs::path home() const { return dir() / "store-home"; }
    fs::path knowledge() const { return home() / "knowledge"; }

    CommandResult glassbox(std::vector<std::string> args) {
        args.insert(args.end(), {"--broker", broker_.endpoint});
        return run_glassbox(std::move(args), milliseconds{120'000});
    }

    json glassbox_json(std::vector<std::string> args) {
        args.push_back("--json");
        const auto r = glassbox(args);
        EXPECT_TRUE(exited_with(r, 0)) << r.status.describe() << r.err;
        return json::parse(r.out, nullptr, false);
    }

    // ops/sample's graph (tier 1) into `default`, its documents (tier 2) into `notes`.
    void load_two_collections() {
        for (const auto& load : std::vector<std::vector<std::string>>{
                 {"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"},
                 {"load", "docs", (kSample / "docs").string(), "--collection", "notes", "--tier",
                  "2"}}) {
            const auto loaded = glassbox(load);
            ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
        }
    }

    // The files of a collection in the knowledge folder (the database, its WAL and index files).
    std::vector<std::string> files_of(const std::string& collection) const {
        std::vector<std::string> found;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(knowledge(), ec)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind(collection + ".", 0) == 0) found.push_back(name);
        }
        return found;
    }

    // The entry of `collection` in `collections list --json`, or null.
    json listed(const std::string& collection) {
        const json list = glassbox_json({"collections", "list"});
        for (const auto& c : list.value("collections", json::array()))
            if (c.value("collection", "") == collection) return c;
        return json();
    }

    RunningBroker broker_;
};

TEST_F(CollectionsTest, ListShowsEveryLoadedCollectionWithItsCountsInALabelledTable) {
    load_two_collections();
    const json list = glassbox_json({"collections", "list"});
    ASSERT_EQ(list["collections"].size(), 2u) << list.dump();
    EXPECT_FALSE(list.value("truncated", true));
    for (const std::string name : {"default", "notes"}) {
        const json entry = listed(name);
        ASSERT_TRUE(entry.is_object()) << name << " is not listed: " << list.dump();
        // The same counts `graph stats` gives for it.
        const json stats = glassbox_json({"graph", "stats", "--collection", name});
        EXPECT_EQ(entry["facts"], stats["quads"]) << name;
        EXPECT_EQ(entry["entities"], stats["subjects"]) << name;
        EXPECT_EQ(entry["documents"], stats["documents"]) << name;
        EXPECT_EQ(entry["chunks"], stats["chunks"]) << name;
        EXPECT_EQ(entry["entity_vectors"], stats["entity_vectors"]) << name;
        EXPECT_EQ(entry["chunk_vectors"], stats["chunk_vectors"]) << name;
        EXPECT_GT(entry.value("bytes_on_disk", 0), 0) << name;
        EXPECT_TRUE(std::regex_match(entry.value("last_loaded", ""),
                                     std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*)")))
            << entry.dump();
    }
    EXPECT_GT(listed("default").value("facts", 0), 100);
    EXPECT_EQ(listed("default").value("documents", -1), 0);
    EXPECT_EQ(listed("notes").value("facts", -1), 0);
    EXPECT_EQ(listed("notes").value("documents", 0), 6);
    EXPECT_EQ(listed("notes")["documents_per_tier"], (json{{"2", 6}}));
    EXPECT_GT(listed("notes").value("chunk_vectors", 0), 0);

    // The table: a title row, then one row per collection whose numbers end where their title does.
    const auto text = glassbox({"collections", "list"});
    ASSERT_TRUE(exited_with(text, 0)) << text.err;
    std::vector<std::string> lines;
    std::istringstream in(text.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 4u) << text.out;
    EXPECT_EQ(lines[0], "Collections");
    for (const char* title :
         {"facts", "entities", "documents", "chunks", "vectors", "bytes on disk", "last loaded"})
        EXPECT_NE(lines[1].find(title), std::string::npos)
            << title << " is not a column: " << text.out;
    EXPECT_EQ(lines[2].rfind("  default", 0), 0u) << text.out;
    EXPECT_EQ(lines[3].rfind("  notes", 0), 0u) << text.out;
    // The count's last digit sits under the last letter of its title.
    const std::string facts = "facts";
    const auto facts_end = lines[1].find(facts) + facts.size();
    ASSERT_LT(facts_end, lines[2].size()) << text.out;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(lines[2][facts_end - 1])) &&
                lines[2][facts_end] == ' ')
        << text.out;
}

TEST_F(CollectionsTest, ShowCountsOneCollectionWithFactsDocumentsAndChunksPerTier) {
    load_two_collections();
    const json shown = glassbox_json({"collections", "show", "notes"});
    EXPECT_EQ(shown.value("collection", ""), "notes");
    EXPECT_EQ(shown["documents_per_tier"], (json{{"2", 6}})) << shown.dump();
    EXPECT_EQ(shown["chunks_per_tier"]["2"], shown["chunks"]) << shown.dump();
    EXPECT_FALSE(shown.value("last_loaded", "").empty());

    const auto text = glassbox({"collections", "show", "notes"});
    ASSERT_TRUE(exited_with(text, 0)) << text.err;
    EXPECT_NE(text.out.find("Collection notes"), std::string::npos) << text.out;
    // The tier row counts documents and chunks, not only facts.
    const std::regex tier2(R"(tier 2 verified +0 +6 +[0-9,]+)");
    EXPECT_TRUE(std::regex_search(text.out, tier2)) << text.out;
    for (const char* label : {"subjects", "chunk vectors", "bytes on disk", "last loaded"})
        EXPECT_NE(text.out.find(label), std::string::npos) << label << ": " << text.out;
}

TEST_F(CollectionsTest, DeleteWithYesRemovesEverythingAndTheCollectionIsNotFoundAfter) {
    load_two_collections();
    ASSERT_FALSE(files_of("notes").empty());
    const json before = listed("notes");
    const auto deleted = glassbox({"collections", "delete", "notes", "--yes"});
    ASSERT_TRUE(exited_with(deleted, 0)) << deleted.err;
    // It says what it removed: the counts it had.
    EXPECT_NE(deleted.out.find("deleted collection \"notes\": removed 0 facts, 6 documents, " +
                               std::to_string(before.value("chunks", 0)) + " chunks"),
              std::string::npos)
        << deleted.out;
    EXPECT_TRUE(files_of("notes").empty()) << "left behind: " << json(files_of("notes")).dump();
    EXPECT_TRUE(listed("notes").is_null());
    EXPECT_TRUE(listed("default").is_object()) << "the other collection stays";
    // A question to it is NotFound, naming it without a server path.
    const auto asked = glassbox({"query", "chunks", "lighthouse", "--collection", "notes"});
    EXPECT_TRUE(exited_with(asked, 2)) << asked.status.describe() << asked.err;
    EXPECT_NE(asked.err.find("NotFound"), std::string::npos) << asked.err;
    EXPECT_NE(asked.err.find("\"notes\""), std::string::npos) << asked.err;
    EXPECT_EQ(asked.err.find(home().string()), std::string::npos) << asked.err;
    // The name is free again: a load makes it anew, with exactly what that load holds.
    const auto again = glassbox(
        {"load", "docs", (kSample / "docs" / "shipyards.md").string(), "--collection", "notes"});
    ASSERT_TRUE(exited_with(again, 0)) << again.err;
    EXPECT_EQ(listed("notes").value("documents", 0), 1);

    // --json says the same as data.
    const json removed = glassbox_json({"collections", "delete", "notes", "--yes"});
    EXPECT_EQ(removed["removed"].value("documents", 0), 1) << removed.dump();
    EXPECT_TRUE(files_of("notes").empty());
}

TEST_F(CollectionsTest, DeleteWithoutYesOverAPipeRefusesAndRemovesNothing) {
    load_two_collections();
    const auto files = files_of("notes");
    // stdin is /dev/null here; then a "y" piped in is no confirmation either.
    const auto refused = glassbox({"collections", "delete", "notes"});
    EXPECT_TRUE(exited_with(refused, 2)) << refused.status.describe() << refused.err;
    EXPECT_NE(refused.err.find("--yes"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("6 documents"), std::string::npos)
        << "it says what it would remove: " << refused.err;
    const auto piped = run_command({"/bin/sh", "-c",
                                    "echo y | '" + glassbox_binary() +
                                        "' collections delete notes --broker " + broker_.endpoint},
                                   dir(), milliseconds{60'000});
    EXPECT_TRUE(exited_with(piped, 2)) << piped.status.describe() << piped.err;
    EXPECT_EQ(files_of("notes"), files);
    EXPECT_EQ(listed("notes").value("documents", 0), 6);
}

TEST_F(CollectionsTest, DeleteOnATerminalAsksAndOnlyYesDeletes) {
    load_two_collections();
    const auto on_terminal = [&](const std::string& answer) {
        return run_command({"/usr/bin/python3", "-c", kOnATerminal, answer, glassbox_binary(),
                            "collections", "delete", "notes", "--broker", broker_.endpoint},
                           dir(), milliseconds{60'000});
    };
    const auto declined = on_terminal("n");
    EXPECT_TRUE(exited_with(declined, 1))
        << declined.status.describe() << declined.out << declined.err;
    EXPECT_NE(declined.out.find("Delete collection \"notes\""), std::string::npos) << declined.out;
    EXPECT_NE(declined.out.find("6 documents"), std::string::npos) << declined.out;
    EXPECT_NE(declined.out.find("nothing was deleted"), std::string::npos) << declined.out;
    EXPECT_TRUE(listed("notes").is_object());
    const auto accepted = on_terminal("y");
    EXPECT_TRUE(exited_with(accepted, 0))
        << accepted.status.describe() << accepted.out << accepted.err;
    EXPECT_NE(accepted.out.find("deleted collection \"notes\""), std::string::npos) << accepted.out;
    EXPECT_TRUE(listed("notes").is_null());
    EXPECT_TRUE(files_of("notes").empty());
}

TEST_F(CollectionsTest, AnUnknownOrIllFormedNameIsATypedErrorWithExit2) {
    load_two_collections();
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"collections", "show", "nope"}, {"collections", "delete", "nope", "--yes"}}) {
        const auto r = glassbox(args);
        EXPECT_TRUE(exited_with(r, 2)) << args[1] << ": " << r.status.describe() << r.err;
        EXPECT_NE(r.err.find("NotFound"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("\"nope\""), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find(home().string()), std::string::npos) << r.err;
    }
    // The store's own op answers the same, for a caller that skips the CLI's look first.
    const auto direct =
        glassbox({"call", "store", R"({"op":"collection-delete","collection":"nope"})"});
    EXPECT_TRUE(exited_with(direct, 2)) << direct.err;
    EXPECT_NE(direct.err.find("NotFound"), std::string::npos) << direct.err;
    for (const char* bad : {"../notes", "with space", ".hidden"}) {
        const auto r = glassbox({"collections", "delete", bad, "--yes"});
        EXPECT_TRUE(exited_with(r, 2)) << bad << ": " << r.err;
        EXPECT_NE(r.err.find("InvalidRequest"), std::string::npos) << bad << ": " << r.err;
    }
    // Without a name the store refuses: no collection is deleted by omission.
    const auto unnamed = glassbox({"call", "store", R"({"op":"collection-delete"})"});
    EXPECT_TRUE(exited_with(unnamed, 2)) << unnamed.err;
    EXPECT_TRUE(listed("default").is_object());
    EXPECT_TRUE(listed("notes").is_object());
}

TEST_F(CollectionsTest, ALoadInProgressRefusesTheDeleteUntilItEnds) {
    load_two_collections();
    // A staged batch of a load that has not committed: a `glassbox load rdf` midway.
    const json staged{{"op", "load-triples"},
                      {"collection", "notes"},
                      {"load", "it-load-midway"},
                      {"source", {{"uri", "file:///midway.nt"}}},
                      {"nquads", "<https://example.org/a> <https://example.org/b> \"c\" .\n"}};
    ASSERT_TRUE(exited_with(glassbox({"call", "store", staged.dump()}), 0));
    const auto refused = glassbox({"collections", "delete", "notes", "--yes"});
    EXPECT_TRUE(exited_with(refused, 2)) << refused.status.describe() << refused.err;
    EXPECT_NE(refused.err.find("load in progress"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("it-load-midway"), std::string::npos) << refused.err;
    EXPECT_EQ(listed("notes").value("documents", 0), 6) << "nothing was deleted";
    // The load goes on and ends; then the delete goes through and takes the load's facts too.
    ASSERT_TRUE(exited_with(
        glassbox({"call", "store",
                  R"({"op":"load-commit","collection":"notes","load":"it-load-midway"})"}),
        0));
    EXPECT_EQ(listed("notes").value("facts", 0), 1);
    const auto deleted = glassbox({"collections", "delete", "notes", "--yes"});
    EXPECT_TRUE(exited_with(deleted, 0)) << deleted.err;
    EXPECT_NE(deleted.out.find("removed 1 fact, 6 documents"), std::string::npos) << deleted.out;
    EXPECT_TRUE(files_of("notes").empty());
}

// Issue 35: a collection's revalidation age, declared by `create` or `set`, shown by `list` and
// `show`, judged against the documents' own date given at load; bad input is a typed error.
TEST_F(CollectionsTest, CreateAndSetDeclareARevalidationAgeThatListAndShowCarry) {
    const auto created = glassbox({"collections", "create", "aging", "--max-age", "2w"});
    ASSERT_TRUE(exited_with(created, 0)) << created.err;
    EXPECT_EQ(created.out, "collection \"aging\": max age 2w, 0 sources past it\n");
    EXPECT_EQ(listed("aging").value("max_age", ""), "2w");

    const auto undated = glassbox({"load", "docs", (kSample / "docs").string(), "--collection",
                                   "aging", "--no-index", "--date", "yesterday"});
    EXPECT_TRUE(exited_with(undated, 2)) << undated.status.describe() << undated.err;
    EXPECT_NE(undated.err.find("--date \"yesterday\""), std::string::npos) << undated.err;
    const auto loaded = glassbox({"load", "docs", (kSample / "docs").string(), "--collection",
                                  "aging", "--no-index", "--date", "2019-05-01"});
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const json shown = glassbox_json({"collections", "show", "aging"});
    EXPECT_EQ(shown.value("max_age", ""), "2w") << shown.dump();
    EXPECT_GT(shown.value("documents", 0), 0) << shown.dump();
    EXPECT_EQ(shown.value("stale_sources", -1), shown.value("documents", 0))
        << "every document is dated 2019: " << shown.dump();

    const auto days = glassbox({"collections", "set", "aging", "--max-age", "14d"});
    ASSERT_TRUE(exited_with(days, 0)) << days.err;
    EXPECT_NE(days.out.find("max age 2w,"), std::string::npos) << "kept in its largest unit";
    const auto cleared = glassbox({"collections", "set", "aging", "--max-age", "none"});
    ASSERT_TRUE(exited_with(cleared, 0)) << cleared.err;
    EXPECT_EQ(cleared.out, "collection \"aging\": no revalidation age\n");
    EXPECT_EQ(listed("aging").value("stale_sources", -1), 0);
    EXPECT_EQ(listed("aging").value("max_age", "?"), "");

    for (const char* bad : {"0d", "1.5d", "90", "1y"}) {
        const auto refused = glassbox({"collections", "set", "aging", "--max-age", bad});
        EXPECT_TRUE(exited_with(refused, 2)) << bad << ": " << refused.err;
        EXPECT_TRUE(refused.err.starts_with("InvalidRequest: max_age \"" + std::string(bad)))
            << refused.err;
    }
    const auto unknown = glassbox({"collections", "set", "nothing-here", "--max-age", "1d"});
    EXPECT_TRUE(exited_with(unknown, 2)) << unknown.err;
    EXPECT_TRUE(unknown.err.starts_with("NotFound:")) << unknown.err;
    EXPECT_FALSE(listed("nothing-here").is_object()) << "set never creates a collection";
}

}  // namespace
}  // namespace glassbox::integration
