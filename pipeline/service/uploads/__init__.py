"""Documents in through the service: write keys upload, replace and delete a namespace's files, and the
namespace's incremental index runs (launched as `pipeline index` processes) take them in.

- `folders`: which namespaces the service may write (created through the API, or enabled by the operator)
  and where their input and the service's own records live;
- `names`: an uploaded file's name made safe to store;
- `intake`: a change written to the input folder within the size limits and quotas;
- `changes`: the per-namespace log of who changed what, when;
- `runs`: the namespace's index runs, one at a time, changes arriving meanwhile coalesced into the next;
- `status`: each document's status from those records and the committed index;
- `routes`: the HTTP endpoints.
"""
