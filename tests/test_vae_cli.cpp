// --param model=DIR for the VAE workloads through the real binary: a diffusers AutoencoderKLWan
// directory written here runs; each bad checkpoint (missing key, wrong shape, wrong dtype,
// truncated file) is one line on stderr naming what is wrong, exit 2, and nothing run.
#include "fourfold/workloads/models/safetensors.hpp"
#include "fourfold/workloads/models/vae_weights.hpp"
#include "test_helpers.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <gtest/gtest.h>

using fourfold::json;
using namespace fourfold::testing;
using namespace fourfold::workloads::models;

namespace {

vae_config small() {
    vae_config c;
    c.name = "small";
    c.base_dim = 8;
    c.z_dim = 4;
    return c;
}

void write_vae(const std::string& dir, const named_tensors& t) {
    fourfold::make_directory(dir);
    const auto c = small();
    write_file(dir + "/config.json", json{{"_class_name", "AutoencoderKLWan"},
                                          {"base_dim", c.base_dim},
                                          {"z_dim", c.z_dim},
                                          {"dim_mult", c.dim_mult},
                                          {"num_res_blocks", c.num_res_blocks},
                                          {"temperal_downsample", c.temporal_downsample}}
                                         .dump());
    write_safetensors(dir + "/diffusion_pytorch_model.safetensors", t);
}

named_tensors good() {
    const auto w = random_vae_weights(small(), vae_parts::both, at::kFloat,
                                      c10::Device(c10::DeviceType::CPU), 5);
    named_tensors out;
    for (const auto& [n, t] : w.tensors)
        out.emplace_back(n, t);
    return out;
}

std::string run_args(const std::string& workload, const std::string& dir, const std::string& db) {
    const std::string shape = workload == "vae_decode"
                                  ? " --param frames=2 --param height=4 --param width=6 --param "
                                    "tile=4 --param stride=3"
                                  : " --param height=16 --param width=16";
    return "run --workload " + workload + " --param model=" + dir + shape +
           " --dtype fp32 --device cpu --variants stock --ledgers correctness --quiet --db " + db;
}

} // namespace

TEST(vae_cli, a_checkpoint_directory_runs_and_bad_ones_are_one_line_exit_2) {
    temp_dir d;
    const auto ok_dir = d / "ok";
    write_vae(ok_dir, good());
    for (const char* w : {"vae_decode", "vae_roundtrip"}) {
        const auto r = run_cli(run_args(w, ok_dir, d / "ok.db"), d);
        EXPECT_EQ(r.code, 0) << w << ": " << r.err << r.out;
        EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
    }

    const std::string key = "decoder.up_blocks.0.resnets.1.conv2.weight";
    struct bad {
        std::string name;
        std::function<void(named_tensors&)> edit;
        std::vector<std::string> needles;
    };
    const std::vector<bad> cases{
        {"missing",
         [&](named_tensors& t) {
             t.erase(
                 std::find_if(t.begin(), t.end(), [&](const auto& p) { return p.first == key; }));
         },
         {key, "no tensor"}},
        {"shape",
         [&](named_tensors& t) {
             for (auto& [n, v] : t)
                 if (n == key)
                     v = at::zeros({2, 2});
         },
         {key, "[2, 2]"}},
        {"dtype",
         [&](named_tensors& t) {
             for (auto& [n, v] : t)
                 if (n == key)
                     v = v.to(at::kLong);
         },
         {key, "I64"}},
    };
    for (const auto& c : cases) {
        auto t = good();
        c.edit(t);
        const auto dir = d / c.name;
        write_vae(dir, t);
        const auto r = run_cli(run_args("vae_decode", dir, d / (c.name + ".db")), d);
        EXPECT_EQ(r.code, 2) << c.name << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        for (const auto& n : c.needles)
            EXPECT_NE(r.err.find(n), std::string::npos) << c.name << ": " << r.err;
    }
    {
        const auto dir = d / "truncated";
        write_vae(dir, good());
        const auto p = dir + "/diffusion_pytorch_model.safetensors";
        const auto bytes = read_file(p);
        write_file(p, bytes.substr(0, bytes.size() - 64));
        const auto r = run_cli(run_args("vae_roundtrip", dir, d / "t.db"), d);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
    }
}
