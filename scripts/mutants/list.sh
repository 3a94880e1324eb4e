# The kept mutants of scripts/mutate.sh (sourced by it; not a script of its own).
#
#   mutant ID FILE DESCRIPTION OLD NEW
# replaces the text OLD, which must occur exactly once in FILE, by NEW: a one-line bug of the kind
# a careful person still writes. When the code moves on and OLD no longer occurs exactly once,
# mutate.sh stops and names the mutant: update OLD to the same bug in the new code (never drop a
# mutant because it is awkward to kill). Ids begin with their area.
# shellcheck shell=bash disable=SC2016  # the texts are code, not expansions

# ---- radix/
mutant radix-split-hits radix/radix_tree.cpp \
  "a split does not carry the node's hit count to the new upper node" \
  'const AccessHistory node_past = host_tier_ ? past(node) : policy_->history(*node);' 'AccessHistory node_past = host_tier_ ? past(node) : policy_->history(*node); node_past.hits = 0;'
mutant radix-split-inserted-at radix/radix_tree.cpp \
  "a split gives the upper node a fresh creation time (fifo, sieve order)" \
  'const AccessHistory node_past = host_tier_ ? past(node) : policy_->history(*node);' 'AccessHistory node_past = host_tier_ ? past(node) : policy_->history(*node); node_past.created = clock_;'
mutant radix-split-prefix-pages radix/radix_tree.cpp \
  "a split leaves the lower node's depth (prefix_pages) where it was" \
  'node->prefix_pages += upper_pages;' ''
mutant radix-partial-page-match radix/radix_tree.cpp \
  "a match that ends inside a page counts that page as matched" \
  'const uint32_t same_pages = same / page_tokens_;' 'const uint32_t same_pages = (same + page_tokens_ - 1) / page_tokens_;'
mutant radix-touch-priority radix/radix_tree.cpp \
  "an access does not record its priority on the path" \
  'AccessHint access = hint;' 'AccessHint access{kDefaultPriority, hint.now, hint.output_tokens, hint.request_class};'
mutant radix-lock-keeps-linked radix/radix_tree.cpp \
  "locking a node leaves it linked in the policy (evictable while pinned)" \
  'if (x->lock_count_++ == 0) {' 'if (x->lock_count_++ == 0 && false) {'
mutant radix-unlock-no-relink radix/radix_tree.cpp \
  "an unlocked leaf is never offered to the policy again" \
  'if (device_evictable(x)) policy_->add(*x);' ''
mutant radix-parent-not-offered radix/radix_tree.cpp \
  "a parent whose last child was removed is not offered to the policy" \
  'if (!parent->is_root() && parent->is_leaf() && parent->lock_count_ == 0) policy_->add(*parent);' ''
mutant radix-evict-one-short radix/radix_tree.cpp \
  "evict_pages(n) releases one page fewer than asked" \
  'while (released < n) {' 'while (released + 1 < n) {'
mutant radix-evict-run-overshoots radix/radix_tree.cpp \
  "a run of pages from one victim takes the whole leaf, past the pages asked for" \
  'runs ? static_cast<uint32_t>(std::min<uint64_t>(leaf->pages, n - released)) : 1;' 'runs ? leaf->pages : 1;'
mutant radix-child-erase-shift radix/child_table.cpp \
  "backward-shift deletion also moves an entry whose home lies right after the hole" \
  'const bool home_after_hole = ((i - home) & mask) < ((i - hole) & mask);' 'const bool home_after_hole = ((i - home) & mask) <= ((i - hole) & mask);'

# ---- radix/: the host tier and the page hashes
mutant tier-host-stale-access radix/radix_tree.cpp \
  "the host policy never sees a node's later accesses (host eviction by a stale recency)" \
  'host_tier_->policy->on_access(*x->host_, access);' ''
mutant tier-host-adopts-device-view radix/radix_tiers.cpp \
  "a node's host part adopts the device policy's state of the node (what LRU keeps: no hits), not the past the tree keeps" \
  'host_tier_->policy->adopt(*host, past(node));' 'host_tier_->policy->adopt(*host, policy_->history(*node));'
mutant tier-writeback-drops-newest radix/radix_tiers.cpp \
  "short of host room, write-back drops the newest victims and keeps the oldest on the host" \
  'if (!on_host && to_drop == 0 && used < fresh.size()) {' 'if (!on_host && used < fresh.size()) {'
mutant tier-writeback-copy-reversed radix/radix_tiers.cpp \
  "write-back copies the host page onto the device page instead of the device page to the host" \
  'h.transfers.push_back({page, copy});' 'h.transfers.push_back({copy, page});'
mutant tier-load-ticket-forgotten radix/radix_tiers.cpp \
  "a node loaded from the host does not remember its load's ticket (a second match may read it early)" \
  'if (ticket != 0) host.load_ticket = ticket;' ''
mutant page-hash-chain-first-page radix/radix_events.cpp \
  "a node's first page chains on its parent's first page instead of the parent's last" \
  ': page_hash(parent, parent->num_pages() - 1);' ': page_hash(parent, 0);'
mutant tier-observer-replaced radix/radix_events.cpp \
  "a second tier observer replaces the first (issue 28: --remote beside --kv-events stored nothing)" \
  'if (!events_) events_ = std::make_unique<EventBuffer>();' 'events_ = std::make_unique<EventBuffer>();'

# ---- eviction/: every policy, the budget and the allocator
mutant lru-add-insertion-order eviction/lru_policy.h \
  "lru ranks an adopted entry (a host part, a split's upper half) by its creation instead of its last access" \
  'make_state<QueueState>(entry).rank = past.last.tick;' 'make_state<QueueState>(entry).rank = past.created;'
mutant lru-unlinked-access-lost eviction/lru_policy.h \
  "lru ignores an access to an unlinked entry (a pinned leaf or an inner node keeps its old stamp)" \
  '      s.rank = hint.tick;
      return;' '      return;'
mutant lfu-ties-insertion eviction/lfu_policy.cpp \
  "lfu breaks ties between equal hit counts by insertion order instead of recency" \
  's.rank = hint.tick;' ''
mutant lfu-chunked-counts-hits eviction/lfu_policy.cpp \
  "an access that counts no hit (a chunked insert) counts one all the same" \
  'if (hint.counts_as_hit) ++s.hits;' '++s.hits;'
mutant lfu-access-not-rekeyed eviction/lfu_policy.cpp \
  "lfu does not re-key a linked leaf that is hit" \
  'relink(s, count);' 'return;'
mutant mru-access-no-relink eviction/newest_first_policies.h \
  "mru keeps an entry where its old access put it when it is accessed again" \
  'relink(s, [&](NewestFirstState& x) { x.rank = hint.tick; });' ''
mutant filo-rank-last-access eviction/newest_first_policies.h \
  "filo orders by last access (an mru) instead of creation" \
  'void on_access(EvictionEntry&, const AccessHint&) override {}' 'void on_access(EvictionEntry& entry, const AccessHint& hint) override { NewestFirstState& s = state(entry); if (s.hook.is_linked()) { relink(s, [&](NewestFirstState& x) { x.rank = hint.tick; }); } else { s.rank = hint.tick; } }'
mutant fifo-rank-last-access eviction/fifo_policy.h \
  "fifo orders by last access (an lru) instead of creation" \
  'void on_access(EvictionEntry&, const AccessHint&) override {}' 'void on_access(EvictionEntry& entry, const AccessHint& hint) override { QueueState& s = state(entry); const bool was = linked(s); if (was) remove(entry); s.rank = hint.tick; if (was) link(s); }'
mutant slru-demote-old-stamp eviction/slru_policy.cpp \
  "slru demotion keeps the entry's old stamp instead of giving it the demotion time" \
  's.rank = newest_tick_;' ''
mutant slru-promote-third-hit eviction/slru_policy.cpp \
  "slru promotes to protected only on the third access" \
  's.hits >= 2 ? kProtected' 's.hits >= 3 ? kProtected'
mutant slru-no-demotion eviction/slru_policy.cpp \
  "slru never demotes the protected excess" \
  '  demote_excess();' ''
mutant sieve-hand-restarts eviction/sieve_policy.cpp \
  "the sieve hand restarts from the oldest entry on every victim" \
  'hand_ = it->rank;' 'hand_ = 0;'
mutant sieve-new-visited eviction/sieve_policy.h \
  "sieve marks an entry visited on its creation, not only on a later hit" \
  'if (s.hits >= 2) s.visited = true;' 'if (s.hits >= 1) s.visited = true;'
mutant priority-never-expires eviction/priority_policy.cpp \
  "priorities never fall back to 35 after the retention" \
  '  demote_expired();' ''
mutant priority-highest-first eviction/priority_policy.cpp \
  "the highest priority is evicted first instead of the lowest" \
  'return static_cast<uint8_t>(std::clamp(priority, kMinPriority, kMaxPriority));' 'return static_cast<uint8_t>(kMaxPriority - std::clamp(priority, kMinPriority, kMaxPriority));'
mutant gdsf-no-inflation eviction/gdsf_policy.cpp \
  "gdsf's inflation L never rises, so old entries never age out" \
  'if (entry != nullptr) inflation_ = std::max(inflation_, state(*entry).score);' ''
mutant gdsf-cost-ignores-depth eviction/gdsf_policy.cpp \
  "gdsf prices a page without the attention over the prefix above it" \
  'static_cast<double>(entry.prefix_pages) + entry.pages / 2.0;' 'entry.pages / 2.0;'
mutant reuse-unclamped-shift eviction/reuse_policy.cpp \
  "reuse trusts a class's shift beyond +-limit * tau" \
  'std::clamp(std::log(reuse_chance(cls) / average), -limit_, limit_)' 'std::log(reuse_chance(cls) / average)'
mutant reuse-ranks-by-rate eviction/reuse_policy.cpp \
  "reuse ranks classes by their rate instead of their chance of a reuse within tau" \
  'return -std::expm1(-rate(cls) * tau());' 'return rate(cls) * tau();'
mutant reuse-same-instant-counted eviction/reuse_policy.cpp \
  "reuse counts a second access at the same instant (match, then insert) as a reuse" \
  'if (s.visited && hint.now > s.last_s) {' 'if (s.visited && hint.now >= s.last_s) {'
mutant budget-low-is-high eviction/cache_budget.cpp \
  "the watermark evicts down to high instead of low" \
  'low_pages_ = std::min(high_pages_, low_pages);' 'low_pages_ = high_pages_;'
mutant budget-evict-whole-request eviction/cache_budget.cpp \
  "allocation evicts the whole request's pages instead of the shortfall" \
  'evictor_.evict_pages(most - pool_.free_pages());' 'evictor_.evict_pages(most);'

# ---- kv_store/
mutant pool-free-at-one kv_store/page_pool.cpp \
  "a page returns to the free list when its last-but-one reference goes" \
  'check_held(page, "release");
  if (--count(page) == 0)' 'check_held(page, "release");
  if (--count(page) <= 1)'
mutant pool-exact-fit-refused kv_store/page_pool.cpp \
  "allocating exactly the free pages is refused" \
  'if (n > free_pages()) return false;' 'if (n >= free_pages()) return false;'
mutant pool-list-release-no-undo kv_store/page_pool.cpp \
  "a refused list release does not restore the references it already dropped" \
  'for (std::size_t j = 0; j < i; ++j) ++counts[pages[j] - first];' ''
mutant pool-list-retain-no-undo kv_store/page_pool.cpp \
  "a refused list retain keeps the references it already added" \
  'for (std::size_t j = 0; j < i; ++j) --counts[pages[j] - first];' ''
mutant pool-peak-not-tracked kv_store/page_pool.cpp \
  "the pool's peak use is never recorded" \
  'if (used_pages() > peak_used_) peak_used_ = used_pages();' ''
mutant pool-partition-ids-from-zero kv_store/page_pool.cpp \
  "a partition numbers its free pages from 0 instead of from its first id" \
  '  ++parent.partitions_;
  refcount_ = zeroed_counts(capacity_);
  never_used_ = first_;' '  ++parent.partitions_;
  refcount_ = zeroed_counts(capacity_);
  never_used_ = 0;'
mutant layout-page-unchecked kv_store/kv_layout.cpp \
  "a layout is validated on the size of a token only, so a page may still wrap past 2^64" \
  'checked_size(*this, true);  // the page' 'checked_size(*this, false);  // the page'

# ---- runtime/: the adapter
mutant runtime-host-pool-unclaimed runtime/prefix_cache_runtime.cpp \
  "the runtime leaves its host tier's pool unclaimed (a comparison the wrong way round)" \
  'if (tiers.host.pool == nullptr || tiers.host.pool == &device) return std::nullopt;' 'if (tiers.host.pool == nullptr || tiers.host.pool != &device) return std::nullopt;'
mutant runtime-positions-from-zero runtime/prefix_cache_runtime.cpp \
  "admit tells the model to start at position 0 after a reused prefix (mistral.rs)" \
  'result.position_offset = reused;' 'result.position_offset = 0;'
mutant runtime-match-whole-prompt runtime/prefix_cache_runtime.cpp \
  "admit may reuse the whole prompt, leaving no token to compute" \
  '(prompt_tokens - 1) / page_tokens_ * page_tokens_' 'prompt_tokens / page_tokens_ * page_tokens_'
mutant runtime-match-not-retained runtime/prefix_cache_runtime.cpp \
  "admit shares the matched pages without taking a reference on them" \
  'pool_.retain(s.block_table);' ''
mutant runtime-commit-no-watermark runtime/prefix_cache_runtime.cpp \
  "commit skips the high/low watermark enforcement" \
  'if (result.new_pages > 0) stats_.evicted_pages += allocator_.enforce_watermarks();' ''
mutant runtime-commit-partial-page runtime/prefix_cache_runtime.cpp \
  "commit caches a partly computed last page" \
  'const uint32_t full_pages = s.computed_tokens / page_tokens_;' 'const uint32_t full_pages = (s.computed_tokens + page_tokens_ - 1) / page_tokens_;'
mutant runtime-keeps-duplicates runtime/prefix_cache_runtime.cpp \
  "commit releases a duplicate page but keeps it in the block table" \
  '      s.block_table[i] = canonical;' ''
mutant runtime-finish-caches-nothing runtime/prefix_cache_runtime.cpp \
  "finish caches nothing that was not committed before" \
  'const CommitResult result = insert_computed(s);
  if (s.access_owed)' 'const CommitResult result{};
  if (s.access_owed)'
mutant runtime-abort-no-watermark runtime/prefix_cache_runtime.cpp \
  "abort does not evict what a pinned commit could not" \
  'stats_.evicted_pages += allocator_.enforce_watermarks();  // as in finish' ''
mutant runtime-decode-page-early runtime/prefix_cache_runtime.cpp \
  "decode takes a new page one token before the last one is full" \
  'if (s.own_tokens.size() == size_t{s.block_table.size()} * page_tokens_) {' 'if (s.own_tokens.size() + 1 == size_t{s.block_table.size()} * page_tokens_) {'
mutant runtime-stale-handle runtime/prefix_cache_runtime.cpp \
  "a handle from a slot's earlier generation is taken for the current one" \
  'if (s.generation != seq.generation) {' 'if (s.generation < seq.generation) {'
mutant runtime-remote-load-touches runtime/prefix_cache_runtime.cpp \
  "a remote load records an access of its path, one more than computing its pages" \
  'insert_computed(s, PathAccess::kNotRecorded);' 'insert_computed(s);'
mutant runtime-remote-access-not-owed runtime/prefix_cache_runtime.cpp \
  "finish forgets the access a remote load left to record" \
  'if (s.access_owed) tree_.touch(s.locked, access_hint(s));' ''
mutant runtime-no-pending-load runtime/prefix_cache_runtime.cpp \
  "admit hands out no ticket for pages another request's load is still copying" \
  'ticket = tree_.pending_load(match.node);' 'ticket = 0;'

# ---- runtime/: SharedRuntime
mutant shared-budget-remainder runtime/shared_runtime.cpp \
  "SharedRuntime's per-shard budget drops the remainder page" \
  'config.cache_bytes % capacity_pages * pages / capacity_pages;' '0;'
mutant shared-pool-remainder runtime/shared_runtime.cpp \
  "SharedRuntime's shards leave the remainder pages of the pool out" \
  'capacity_pages / shards + (i < capacity_pages % shards ? 1 : 0);' 'capacity_pages / shards;'
mutant shared-one-shard runtime/shared_runtime.cpp \
  "SharedRuntime puts every namespace on shard 0" \
  '0x9E3779B97F4A7C15ull >> 32) % shards_.size());' '0x9E3779B97F4A7C15ull >> 32) % 1);'

# ---- sim/: the reference scheduler
mutant sched-no-decode-reserve sim/scheduler.cpp \
  "admission reserves no page of decode room for the running requests" \
  '- cached / page_tokens_ + running_.size();' '- cached / page_tokens_;'
mutant sched-protect-late sim/scheduler.cpp \
  "protection starts one preemption late (max_preemptions + 1)" \
  'return e.preemptions >= config_.max_preemptions ? kMaxPriority + 1' 'return e.preemptions >= config_.max_preemptions + 1 ? kMaxPriority + 1'
mutant sched-preempt-no-commit sim/scheduler.cpp \
  "a preempted request's computed pages are not committed to the cache" \
  'runtime_.commit(e.seq, runtime_.view(e.seq).computed_tokens);' ''
mutant sched-readmit-hits-twice sim/scheduler.cpp \
  "a re-admitted request counts its hit tokens a second time" \
  '++stats_.readmitted;' '++stats_.readmitted; stats_.hit_tokens += r.reused_tokens;'
mutant sched-victim-oldest sim/scheduler.cpp \
  "preemption picks the oldest admission among equal priorities" \
  '(effective(e) == effective(v) && e.admitted_at > v.admitted_at)' '(effective(e) == effective(v) && e.admitted_at < v.admitted_at)'
mutant sched-urgent-late sim/scheduler.cpp \
  "a waiting request becomes urgent one preemption late" \
  'return e.preemptions >= config_.max_preemptions ||' 'return e.preemptions > config_.max_preemptions ||'
mutant sched-lpm-urgent-last sim/scheduler.cpp \
  "lpm examines urgent requests last instead of first" \
  'if (a.urgent != b.urgent) return a.urgent;' 'if (a.urgent != b.urgent) return b.urgent;'
mutant sched-share-holds-urgent sim/scheduler.cpp \
  "in-batch sharing holds an urgent request behind a leader" \
  'key != 0 && !urgent && sharing_.contains(key)' 'key != 0 && sharing_.contains(key)'
mutant sched-budget-not-spent sim/scheduler.cpp \
  "prefill chunks do not spend the step's token budget" \
  '  budget -= chunk;' ''
mutant sched-resume-drops-token sim/scheduler.cpp \
  "a preempted request resumes without its last sampled answer token" \
  'e.request.answer.begin() + e.sampled);' 'e.request.answer.begin() + e.sampled - 1);'

# ---- tools/: cache-mode replay, engine-mode replay, latency and reports
mutant replay-admits-as-engine tools/replay/cache_replay.cpp \
  "cache mode admits as an engine (last page never matched, all or nothing)" \
  '.mode = AdmitMode::kCacheOnly,
                                                .retention' '.retention'
mutant replay-uncached-not-counted tools/replay/cache_replay.cpp \
  "cache mode does not count the pages it could not cache" \
  'result_.uncached_pages += admitted.uncached_pages;' ''
mutant replay-never-finishes tools/replay/cache_replay.cpp \
  "cache mode never finishes a request: its path stays locked, its pages uncached" \
  '  runtime_->finish(admitted.seq);' ''
mutant percentile-rank-above tools/replay/percentile.h \
  "percentiles (call latencies and TTFT) are one rank too high" \
  'return rank == 0 ? 1 : rank;' 'return rank == 0 ? 1 : rank < n ? rank + 1 : rank;'
mutant percentile-rank-below tools/replay/percentile.h \
  "percentiles (call latencies and TTFT) are one rank too low" \
  'return rank == 0 ? 1 : rank;' 'return rank <= 1 ? 1 : rank - 1;'
mutant engine-ttft-from-start tools/replay/engine_replay.cpp \
  "TTFT is measured from the first arrival instead of the request's own" \
  'ttft_.push_back(now_ - trace_.requests[id].arrival_s);' 'ttft_.push_back(now_ - arrival(0));'
mutant engine-ttft-max-is-min tools/replay/engine_parts.cpp \
  "the largest TTFT is read from the wrong end of the sorted list" \
  'run.ttft_max_s = ttft.empty() ? 0.0 : ttft.back();' 'run.ttft_max_s = ttft.empty() ? 0.0 : ttft.front();'
mutant report-json-evictions tools/replay/replay_report.cpp \
  "the JSON report's evictions are the emptied leaves, not the pages" \
  '{"evictions", r.evicted_pages},' '{"evictions", r.evicted_nodes},'
mutant report-digit-groups tools/replay/replay_report.cpp \
  "numbers in the text report are grouped off by one digit" \
  'if (i > 0 && (digits.size() - i) % 3 == 0) out += ' 'if (i > 0 && (digits.size() - i - 1) % 3 == 0) out += '
mutant engine-report-p90 tools/replay/engine_report.cpp \
  "the engine report prints p50 as TTFT p90" \
  'row("TTFT p90", [&](const EngineRun& r) { return seconds(r.ttft_p90_s); });' 'row("TTFT p90", [&](const EngineRun& r) { return seconds(r.ttft_p50_s); });'
mutant cluster-events-not-delayed tools/replay/cluster_replay.cpp \
  "cluster mode ignores --event-delay: every batch reaches the router when its step ends" \
  'w.sent.emplace_back(w.now + config_.event_delay_s, std::move(batch));' 'w.sent.emplace_back(w.now, std::move(batch));'
mutant cluster-predicted-uncut tools/replay/cluster_replay.cpp \
  "the predicted hit is the whole overlap, not cut as an engine cuts its match" \
  'request.prompt.size(), page_tokens_);' '0, page_tokens_);'

# ---- tools/: the command line's flags and the trace readers
mutant cli-low-default-above-high tools/cli/budget.cpp \
  "--high-watermark alone keeps the default low watermark even above the new high one" \
  '      out.low = out.high;' ''
mutant budget-watermark-size-rounds-down eviction/cache_budget.cpp \
  "a watermark given as a size becomes one page fewer when it is a whole number of pages" \
  'const uint64_t pages = w.bytes() / bytes_per_page;' 'const uint64_t pages = (w.bytes() - 1) / bytes_per_page;'
mutant trace-last-line-dropped tools/trace/trace_input.cpp \
  "a last line without a newline is not read" \
  'return eof_ && scanned > from ? std::optional(scanned) : std::nullopt;' 'return std::nullopt;'
mutant trace-hash-ids-floor tools/trace/hash_id_reader.cpp \
  "a hash-id record's partial last block is not counted among the blocks its input_length needs" \
  '(uint64_t{r.input_tokens} + block_tokens_ - 1) / block_tokens_;' 'uint64_t{r.input_tokens} / block_tokens_;'

# ---- tools/: Belady's bound
mutant belady-next-use-self tools/replay/belady_policy.cpp \
  "the next-use index names the request itself instead of the next one" \
  '= uses[i + 1].request;' '= uses[i].request;'
mutant belady-head-page tools/replay/belady_policy.cpp \
  "belady keys a leaf by its first page's next use instead of its tail page's" \
  'entry.prefix_pages + entry.pages - 1);' 'entry.prefix_pages);'
mutant belady-no-revalidation tools/replay/belady_policy.cpp \
  "belady trusts a victim's key after its tail was truncated" \
  'if (next == first.rank) return &entry_of(first);' 'return &entry_of(first);'
mutant belady-ignores-namespace tools/replay/belady_policy.cpp \
  "belady's page identity ignores the namespace" \
  'splitmix64(trace.requests[r].ns ^ 0x6265' 'splitmix64(0 ^ 0x6265'
mutant belady-nearest-first tools/replay/belady_policy.h \
  "belady evicts the page used soonest instead of the farthest" \
  'return a.rank > b.rank; }' 'return a.rank < b.rank; }'

# ---- router/: the event feed
mutant router-feed-unbounded-drain router/event_feed.cpp \
  "the feed drains a socket to the end before it looks at the stop flag" \
  'taken < kDrainLimit &&' 'true &&'
mutant router-feed-stale-stamp router/event_feed.cpp \
  "a message is stamped with the time its pass began, not when it was taken" \
  'const Clock::time_point taken_at = Clock::now();' 'const Clock::time_point taken_at = w.replay_sent;'
mutant router-feed-duplicate-applied router/event_feed.cpp \
  "a PUB batch already applied through replay is applied again" \
  'if (s < w.next_seq) return;  // already applied (through replay)' ''
mutant router-feed-forged-kept router/event_feed.cpp \
  "a held batch the replay proved the worker never had is asked for again (a replay storm)" \
  'if (first->second.requests_before < w.requests_sent) {' 'if (false) {'
# ---- router/: the index by content, the cost, the codec's hashes
mutant router-index-namespace-mixed router/block_index.cpp \
  "radixkv's namespace marker is also mixed in as extra keys (its keys are not its hashes)" \
  'if (ns) extra = nullptr;' ''
mutant router-index-remap-keeps-old router/block_index.cpp \
  "an engine hash re-stored with other content leaves the worker holding the old content" \
  'drop_holder(old, e->second, h);' ''
mutant router-index-last-tier router/block_index.cpp \
  "a block on several mediums counts its last medium's weight, not its best" \
  'if (locations & (1u << i)) best = std::max(best, w.locations[i].weight);' 'if (locations & (1u << i)) best = w.locations[i].weight;'
mutant router-cost-unweighted router/route_cost.cpp \
  "the cost ignores the tiers: prefill from the overlap, not the weighted overlap" \
  'c.prefill_blocks = std::max(request_blocks - c.weighted_overlap_blocks, 0.0);' 'c.prefill_blocks = std::max(request_blocks - c.overlap_blocks, 0.0);'
mutant events-bytes-hash-little-endian events/event_codec.cpp \
  "a bytes block hash is read little-endian (not vLLM's int conversion)" \
  'value = (value << 8) | static_cast<unsigned char>(o.via.bin.ptr[i]);' 'value |= uint64_t{static_cast<unsigned char>(o.via.bin.ptr[i])} << (8 * (i - from));'
# ---- events/: endpoints
mutant endpoint-ipv4-as-host-name events/endpoint.cpp \
  "a dotted quad is checked as a host name (digits are letters of one), so 256.1.1.1 passes" \
  'if (host.find_first_not_of("0123456789.") == std::string_view::npos) {' 'if (host.find_first_not_of("0123456789") == std::string_view::npos) {'

# ---- remote/
mutant remote-writes-not-answers remote/remote_tier.cpp \
  "a write the store took does not count as an answer: a tier that only writes never worked" \
  '++answered_;
      stored_pages_ += result.stored;' 'stored_pages_ += result.stored;'
mutant remote-bad-value-served remote/remote_tier.cpp \
  "a value whose header does not check out is loaded anyway" \
  'if (check_page_value(*values[loaded], expected, &payload) != ValueCheck::kOk) {' 'if (check_page_value(*values[loaded], expected, &payload) == ValueCheck::kMagic) {'
mutant remote-partial-as-miss remote/remote_tier.cpp \
  "a lookup one cluster master failed loads nothing from the healthy ones" \
  'rest = std::move(e.results);' ''
mutant remote-prefetch-partial-kept-as-miss remote/prefetcher.cpp \
  "a key a partly failed prefetch lost is kept as a miss, so the load never asks again" \
  'if (values[i] || !partial) keep(lookup.hashes[i], std::move(values[i]));' 'keep(lookup.hashes[i], std::move(values[i]));'
mutant remote-report-prefetch-errors tools/replay/replay_result.cpp \
  "the report's remote_errors leaves out failed prefetches" \
  'result.errors = s.errors + s.prefetch.errors;' 'result.errors = s.errors;'
mutant remote-prefetch-asks-again remote/prefetcher.cpp \
  "a page already fetched or in flight is looked up again (and take() waits on the new lookup)" \
  'if (in_flight_.contains(hashes[i]) || fetched_.contains(hashes[i])) continue;' ''
mutant remote-prefetch-stale-name remote/prefetcher.cpp \
  "forgetting the oldest name forgets a page kept again since (the newest)" \
  'if (it == fetched_.end() || it->second.kept != name.kept) return;  // stale' 'if (it == fetched_.end()) return;'
mutant remote-prefetch-no-byte-bound remote/prefetcher.cpp \
  "the prefetched values are bounded by count only, not by bytes" \
  'while ((fetched_.size() > pages_limit_ || fetched_bytes_ > bytes_limit_) &&' 'while ((fetched_.size() > pages_limit_) &&'
mutant remote-staging-released-before-ticket runtime/remote_staging.cpp \
  "a remote load's staging and device pages are given back before its copy's ticket is done" \
  'while (!staged_.empty() && copier_.done(staged_.front().ticket)) {' 'while (!staged_.empty()) {'
mutant remote-staging-hit-not-waited runtime/prefix_cache_runtime.cpp \
  "a device hit on pages a remote load still writes gets no ticket covering it" \
  'ticket = std::max(ticket, staging_->writing(' 'ticket = std::max(ticket, 0 * staging_->writing('
mutant remote-staging-commit-not-waited runtime/prefix_cache_runtime.cpp \
  "a commit switches to pages a remote load still writes without waiting for it" \
  'if (remote_load != 0) tree_.wait_copy(remote_load);' ''
mutant remote-staging-bytes-not-awaited remote/remote_tier.cpp \
  "the remote tier writes a page's bytes to the store while a staged copy still writes them" \
  'if (arrivals_ != nullptr) arrivals_->await(tier, page);' ''
mutant remote-staging-copy-not-priced tools/replay/engine_replay.cpp \
  "engine replay prices host hits on the H2D engine but not the remote pages staged through it" \
  'const uint32_t loads = (r.host_hit_tokens + r.remote_hit_tokens) / page_tokens;' 'const uint32_t loads = r.host_hit_tokens / page_tokens;'
mutant rank-queue-gap-names-late eviction/rank_queue_policy.cpp \
  "past more empty ring slots than it skips, the look-ahead names an entry of the late set instead of nobody" \
  'queued_at = queued_after(position);
    if (queued_at == kGaveUp) return nullptr;' 'queued_at = queued_after(position);'
mutant rank-queue-batch-ignores-late eviction/rank_queue_policy.cpp \
  "the look-ahead's scan of the ring names the queued entries ahead even when entries linked out of order come between" \
  '  if (!late_.empty()) return EvictionPolicy::next_victims_after(entry, out);
' ''
mutant policy-lookahead-batch-restarts eviction/eviction_policy.h \
  "the default look-ahead of k victims asks for the one after its starting entry each time, naming the same victim k times" \
  'e = next_victim_after(*e);' 'e = next_victim_after(entry);'
mutant rank-queue-no-compaction eviction/rank_queue_policy.cpp \
  "a full ring with half its slots empty grows instead of compacting" \
  'if (queued_ * 2 <= ring_.size() && !ring_.empty()) {' 'if (false) {'
mutant heap-huge-pages-ignored kv_store/heap.cpp \
  "use_huge_pages says yes but mimalloc keeps mapping 4 KiB pages" \
  'mi_option_set_enabled(mi_option_large_os_pages, on);' '(void)on;'

# ---- metrics/ (issue 33)
mutant metrics-stack-root-first metrics/shards_mrc.cpp \
  "the live curve stacks a request's pages root first, so a parent ends less recent than its child" \
  'for (std::size_t i = page_keys.size(); i-- > 0;) {' 'for (std::size_t i = 0; i < page_keys.size(); ++i) {'
mutant metrics-unweighted-misses metrics/shards_mrc.cpp \
  "a sampled miss counts once instead of 1/R times" \
  'weight_(1.0 / rate_),' 'weight_(1.0),'
mutant metrics-window-short metrics/shards_mrc.cpp \
  "the curve's window drops a key one place before it misses at the largest capacity" \
  'const double keys = std::ceil(rate * static_cast<double>(config.capacities_pages.back()));' 'const double keys = std::ceil(rate * static_cast<double>(config.capacities_pages.back())) - 1;'
mutant metrics-segment-rebuild metrics/recency_index.cpp \
  "compaction rebuilds the recency index's occupied slots one short where they end inside a word" \
  'slot_bits_[full_words] = (uint64_t{1} << (live % kWordBits)) - 1;' 'slot_bits_[full_words] = (uint64_t{1} << (live % kWordBits - 1)) - 1;'
mutant metrics-segment-sum-own metrics/recency_index.cpp \
  "a distance counts the keys of the slot's own segment among those after it" \
  'above += group[i] & (0u - static_cast<uint32_t>(i > own));' 'above += group[i] & (0u - static_cast<uint32_t>(i >= own));'
mutant metrics-evict-no-reprobe metrics/recency_index.cpp \
  "a new key that evicts the least recent goes where it was looked up, past the hole the deletion left" \
  "pos = position(key);  // the deletion may have opened a hole on the key's probe path" '// (no second look-up)'
mutant metrics-label-quote metrics/prometheus.cpp \
  "a double quote inside a label value is written unescaped" \
  'out += "\\\"";' 'out += "\"";'
mutant metrics-histogram-le metrics/latency_histogram.cpp \
  "a latency equal to a bucket's bound counts in the next bucket (Prometheus's le is inclusive)" \
  'const auto bound = std::lower_bound(' 'const auto bound = std::upper_bound('
mutant metrics-shard-curve-hits runtime/runtime_metrics.cpp \
  "SharedRuntime's curve sums its shards' sizes but keeps only the first shard's hits" \
  'curve->points[i].hit_tokens += o.curve->points[i].hit_tokens;' '(void)0;'
mutant metrics-host-gauges-dropped runtime/runtime_metrics.cpp \
  "a runtime with a host tier exports no host bytes" \
  'if (m.host) local("host", *m.host);' '(void)0;'
mutant metrics-lower-since-opened runtime/runtime_metrics.cpp \
  "a runtime exports its tiers below's counters since they were opened, not since it attached them" \
  'since_attached(m.lower, lower_attached_);' 'since_attached(m.lower, {});'
mutant metrics-lower-hits-remote runtime/runtime_metrics.cpp \
  "the disk tier's hits are exported as the remote tier's too (counted twice)" \
  'if (l.tier != "remote") others += l.loaded_pages;' '(void)l;'
mutant metrics-listen-undrained tools/replay/engine_replay.cpp \
  "the engine replay renders its last exposition with disk writes still in flight" \
  'if (config_.disk != nullptr) config_.disk->drain();' '(void)0;'
mutant runtime-partial-no-copy runtime/prefix_cache_runtime.cpp \
  "partial-page reuse counts the copied tokens but never copies the page" \
  'partial_copier_->wait(partial_copier_->copy(pool_, pool_, {&copy, 1}));' '(void)copy;'
mutant runtime-partial-last-token runtime/prefix_cache_runtime.cpp \
  "partial-page reuse may take the last prompt token, whose logits must be computed" \
  ': s.prompt_tokens - 1;' ': s.prompt_tokens;'
mutant disk-payload-not-checked disk/disk_tier.cpp \
  "a page loaded from disk is checked by its head only: a torn or corrupted payload is served" \
  'if (check_slot(slot, layout_id_, geometry_, header) != SlotCheck::kOk) return false;' 'if (check_slot_head(slot, layout_id_, geometry_, header) != SlotCheck::kOk) return false;'
mutant disk-evicts-inner-pages disk/disk_index.cpp \
  "the disk evicts pages that have children on disk, stranding them" \
  'return s.state == State::kStored && id != keep_ && !children_.contains(s.hash);' 'return s.state == State::kStored && id != keep_;'
mutant disk-reclaim-one-level disk/disk_index.cpp \
  "a parent's loss reclaims its children on disk but not theirs" \
  'stack.push_back(at(c).hash);' ''
mutant disk-lost-parent-child-written disk/disk_tier.cpp \
  "a page whose parent left the trie unwritten in the same call is written anyway" \
  'if ((!first && parent == kNoSlot && lost_.contains(page.parent)) ||' 'if ((false) ||'
mutant disk-recovery-older-copy-wins disk/disk_index.cpp \
  "recovery keeps the oldest copy of a page written twice, not the newest" \
  'return a.header.generation < b.header.generation;' 'return a.header.generation > b.header.generation;'
mutant disk-recovery-keeps-unreachable disk/disk_index.cpp \
  "recovery keeps pages whose chain reaches no first page on disk" \
  'removed_ = {};
  reclaim_unanchored();' 'removed_ = {};'
mutant disk-inflight-read-from-file disk/disk_tier.cpp \
  "a page whose write is still queued is read from its slot on file, not from the write's buffer" \
  'if (const auto w = writing_.find(r.slot); w != writing_.end()) {' 'if (const auto w = writing_.find(r.slot); false && w != writing_.end()) {'
mutant disk-lower-tier-asked-under-first-parent runtime/lower_tiers.cpp \
  "the tier under the disk is asked for the rest of the run under the run's first parent" \
  'loaded == 0 ? parent : hashes[loaded - 1], hashes.subspan(loaded, count - loaded),' 'parent, hashes.subspan(loaded, count - loaded),'
mutant disk-replay-remote-hits-count-disk tools/replay/cache_replay.cpp \
  "the replay counts the disk's part of a lower-tier run as the remote tier's hits too" \
  'result_.remote.hit_tokens += admitted.remote_hit_tokens - disk_tokens;' 'result_.remote.hit_tokens += admitted.remote_hit_tokens;'

# ---- eviction/quota_policy.cpp, eviction/retention_layer.cpp (issue 31)
mutant quota-min-evicted eviction/quota_policy.cpp \
  "a tenant exactly at its min is still evicted by another's pressure" \
  'if (g.quota != nullptr && cached(g) <= g.quota->min_pages) continue;' 'if (g.quota != nullptr && cached(g) < g.quota->min_pages) continue;'
mutant quota-max-ignored eviction/quota_policy.cpp \
  "a tenant over its max does not give its own pages first" \
  'if (over != nullptr) return over->policy->victim();' ''
mutant retention-never-expires eviction/retention_layer.cpp \
  "a retention hint or a hold never runs out" \
  'while (!expiry_.empty() && expiry_.begin()->deadline <= now_) {' 'while (!expiry_.empty() && expiry_.begin()->deadline < 0) {'
mutant retention-spill-forgotten-at-pin eviction/retention_layer.cpp \
  "an entry the share spilled is protected again once a request pins and unpins it" \
  '  if (s.spilled) want = kSpilled;' '  if (false) want = kSpilled;'
mutant hints-subagent-outlives-main tools/replay/session_hints.cpp \
  "--hints online keeps holding sub-agents after their main agent is back" \
  'for (const uint32_t sub : it->second) runtime.release(session, sub);' 'for (const uint32_t sub : it->second) (void)sub;'

# ---- router/route_ledger.cpp (issue 33)
mutant router-observe-twice router/route_ledger.cpp \
  "a route's delivered hit is taken twice" \
  'if (slot.observed) {' 'if (false) {'

# ---- radix/radix_tiers.cpp (issue 31, host-tier quotas)
mutant host-quota-demotion-uncounted radix/radix_tiers.cpp \
  "a page demoted to the host is not counted in its namespace's host pages" \
  'count_host_pages(x, 1);' ''
