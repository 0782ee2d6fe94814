// Lexical similarity: cosine of vectors and word bags, lexical profiles, title containment,
// trigram similarity.
#include "text/similarity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace glassbox::text {
namespace {

TEST(Cosine, OfVectorsAndOfWordBags) {
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1, 0}, std::vector<double>{1, 0}), 1.0);
    EXPECT_NEAR(cosine(std::vector<double>{1, 1}, std::vector<double>{1, 0}), 1.0 / std::sqrt(2.0),
                1e-12);
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1, 0}, std::vector<double>{0, 0}), 0.0);
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1}, std::vector<double>{1, 0}), 0.0);

    const auto a = term_counts("The Cat sat; the cat!");
    EXPECT_EQ(a.at("the"), 2.0);
    EXPECT_EQ(a.at("cat"), 2.0);
    EXPECT_EQ(a.at("sat"), 1.0);
    EXPECT_DOUBLE_EQ(cosine(a, term_counts("the cat sat the cat")), 1.0);
    EXPECT_DOUBLE_EQ(cosine(a, term_counts("dogs run")), 0.0);
    EXPECT_GT(cosine(term_counts("Zürich Schweiz"), term_counts("zürich")), 0.5);
}

// The lexical profile as its definition reads: words, plus each word's '#'-padded trigrams
// (weighted 0.5), as strings in a map; the hashed profile must score every pair the same.
TermCounts reference_profile(std::string_view text) {
    TermCounts profile;
    for (const auto& [word, n] : term_counts(text)) {
        profile["w" + word] += n;
        const std::string padded = "#" + word + "#";
        for (std::size_t i = 0; i + 3 <= padded.size(); ++i)
            profile["g" + padded.substr(i, 3)] += 0.5 * n;
    }
    return profile;
}

TEST(LexicalProfile, ScoresAsTheStringDefinition) {
    const std::vector<std::string> texts = {"Who founded the shipyard that built the MV Curlew?",
                                            "MV Curlew built by Brenn and Daughters Shipyard",
                                            "Brenn and Daughters Shipyard founded by Oskar Brenn",
                                            "Cruz Azul FC plays in Liga MX",
                                            "children wear wears child",
                                            "Zürich Schweiz zürich",
                                            "aaa aaaa aa a",
                                            "x",
                                            "",
                                            "!!! ???"};
    for (const auto& a : texts) {
        for (const auto& b : texts) {
            EXPECT_NEAR(cosine(lexical_profile(a), lexical_profile(b)),
                        cosine(reference_profile(a), reference_profile(b)), 1e-12)
                << '"' << a << "\" vs \"" << b << '"';
        }
    }
    EXPECT_NEAR(cosine(lexical_profile("Wear the CHILD"), lexical_profile("wear the child")), 1.0,
                1e-12);
    const double forms = cosine(lexical_profile("wears"), lexical_profile("wear"));
    EXPECT_GT(forms, 0.3);
    EXPECT_LT(forms, 1.0);
    EXPECT_EQ(cosine(lexical_profile("dogs"), lexical_profile("")), 0.0);
    // Repeats add up: one feature each, with the summed weight.
    const auto twice = lexical_profile("abc abc");
    const auto once = lexical_profile("abc");
    ASSERT_EQ(twice.features.size(), once.features.size());
    for (std::size_t i = 0; i < once.features.size(); ++i) {
        EXPECT_EQ(twice.features[i].first, once.features[i].first);
        EXPECT_DOUBLE_EQ(twice.features[i].second, 2 * once.features[i].second);
    }
    EXPECT_DOUBLE_EQ(twice.norm, 2 * once.norm);
}

// LexicalQuery must give the profiles' cosine bit for bit (graph-rag's pre-filter ranks by it):
// parts joined by spaces, repeats, identifier-style labels, UTF-8, empty texts, and a text long
// enough to grow the reused table after short ones.
TEST(LexicalQuery, EqualsTheCosineOfTheJoinedTextsProfiles) {
    const std::string long_text = [] {
        std::string s;
        for (int i = 0; i < 200; ++i) s += "word" + std::to_string(i % 37) + " Zürich_" + "x ";
        return s;
    }();
    const std::vector<std::vector<std::string>> texts = {
        {"MV Curlew", "built by", "Brenn and Daughters Shipyard"},
        {"Cruz_Azul_FC", "league", "Liga MX"},
        {"children", "wear", "wears child children"},
        {"Zürich", "Schweiz", "zürich"},
        {"aaa", "aaaa", "aa a"},
        {"abc", "abc", "abc"},
        {"", "", ""},
        {"!!!", "???", "..."},
        {"x"},
        {},
        {long_text, "founded", "Oskar Brenn"},
        {"who", "founded the", "shipyard"},
        {"MV Curlew", "built by", "Brenn and Daughters Shipyard"},
    };
    for (const std::string& question : std::vector<std::string>{
             "Who founded the shipyard that built the MV Curlew?", "Cruz Azul FC plays in Liga MX",
             "Zürich zürich schweiz", "a", "", "!!! ???", "abc abc", long_text.substr(0, 300)}) {
        LexicalQuery query(question);
        const auto question_profile = lexical_profile(question);
        for (const auto& parts : texts) {
            std::string joined;
            std::vector<std::string_view> views;
            for (const auto& p : parts) {
                if (!views.empty()) joined += ' ';
                joined += p;
                views.emplace_back(p);
            }
            EXPECT_EQ(query.cosine(views), cosine(question_profile, lexical_profile(joined)))
                << '"' << question << "\" vs \"" << joined << '"';
        }
    }
    LexicalQuery query("MV Curlew");
    EXPECT_EQ(query.cosine({"mv", "curlew"}), 1.0);
    EXPECT_EQ(query.cosine({"", "!"}), 0.0);
}

TEST(TitleContainment, IsTheShareOfTitleContentWordsTheQuestionNames) {
    const auto question =
        content_words("Who directed the film shot in or around Leland, North Carolina in 1986?");
    EXPECT_DOUBLE_EQ(title_containment("Leland, North Carolina", question), 1.0);
    EXPECT_DOUBLE_EQ(title_containment("The Leland Stanford", question),
                     0.5);  // "the" is not counted
    EXPECT_DOUBLE_EQ(title_containment("Maximum Overdrive", question), 0.0);
    EXPECT_DOUBLE_EQ(title_containment("", question), 0.0);
    EXPECT_DOUBLE_EQ(title_containment("of the", question), 0.0);
    const auto words = content_words("The Cat of the cat");
    EXPECT_EQ(words, std::vector<std::string>{"cat"});
}

TEST(TrigramSimilarity, IsTheDiceCoefficientOfPaddedTrigrams) {
    EXPECT_DOUBLE_EQ(trigram_similarity("Nationality", "nationality"), 1.0);
    EXPECT_DOUBLE_EQ(trigram_similarity("Cruz_Azul_FC", "cruz azul fc"), 1.0);
    const double close = trigram_similarity("nationality", "national");
    EXPECT_GT(close, 0.5);
    EXPECT_LT(close, 1.0);
    EXPECT_DOUBLE_EQ(trigram_similarity("abc", "xyz"), 0.0);
    EXPECT_DOUBLE_EQ(trigram_similarity("", "abc"), trigram_similarity("abc", ""));
}

TEST(TrigramSimilarity, OfKeptTrigramsIsTheStringsFigure) {
    const std::vector<std::string> texts{"cruz azul fc", "Cruz_Azul_FC", "cruz azul", "", "aaaa",
                                         "aa aa",        "São Paulo FC", "sao paulo"};
    for (const auto& a : texts) {
        for (const auto& b : texts) {
            EXPECT_EQ(trigram_similarity(trigrams(a), trigrams(b)), trigram_similarity(a, b))
                << a << " | " << b;
        }
    }
}

}  // namespace
}  // namespace glassbox::text
