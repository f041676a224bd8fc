// output_path.h — the rules for a file a command writes (quantize --out): what may be replaced,
// and the folder it goes into.
#pragma once

#include <string>
#include <vector>

namespace llmwb::cli {

// Checks `out` (named by `flag` in errors) before anything is written, and creates its missing
// parent folders (as make-model does). Refuses, with an llmwb::Error naming the path:
//  - an `out` that is not a regular file (a device node such as /dev/full, a FIFO, a socket, a
//    folder), even with `force`: renaming a new file over it would replace the node itself;
//  - an `out` that is one of `inputs` (the same file by device and inode, however the path is
//    spelled, through links too), unless `force`; a folder among `inputs` stands for the files
//    directly in it (a Hugging Face model folder);
//  - an existing `out`.partial (the file written first and renamed into place) that is not a
//    regular file.
// An existing regular `out` that is no input is replaced.
void prepare_output_file(const std::string& flag, const std::string& out, const std::vector<std::string>& inputs,
                         bool force);

}  // namespace llmwb::cli
