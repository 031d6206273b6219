#!/usr/bin/env python3
"""Checks the price snapshot against the costs Claude Code itself reports.

Every distinct `modelUsage` reading of Claude stream-json results (`{model: {inputTokens,
outputTokens, cacheReadInputTokens, cacheCreationInputTokens, costUSD}}`) is priced with
data/litellm-prices.json; a reading agrees when the estimate is within 1e-4 relative (or 1e-6
USD). modelUsage does not split 1-hour from 5-minute cache writes, so a reading agrees when
either rate gives its cost. Usage: scripts/check-prices.py DIR [-v]
"""
import json, glob, sys, collections
prices = json.load(open('data/litellm-prices.json'))
def entry(m):
    m = m.split('/')[-1].replace('[1m]','').lower()
    if m in prices: return prices[m]
    import re
    b = re.sub(r'-(\d{8}|latest)$','',m)
    if b in prices: return prices[b]
    c = sorted(k for k in prices if k.startswith(b+'-') and re.fullmatch(r'-\d{8}', k[len(b):]))
    return prices[c[-1]] if c else None
stats = collections.defaultdict(lambda: [0,0,0.0,0.0,0])  # n, agree, reported, ours, within 0.1%
seen=set()
for f in glob.glob(sys.argv[1]+'/*'):
    for line in open(f, errors='replace'):
        if '"modelUsage"' not in line: continue
        try: o=json.loads(line)
        except Exception: continue
        mu=o.get('modelUsage')
        if not isinstance(mu,dict): continue
        for m,v in mu.items():
            if not isinstance(v,dict) or 'costUSD' not in v: continue
            g=lambda k: v.get(k) or 0
            key=(m,g('inputTokens'),g('outputTokens'),g('cacheReadInputTokens'),g('cacheCreationInputTokens'),v['costUSD'])
            if key in seen: continue
            seen.add(key)
            e=entry(m); s=stats[m]; s[0]+=1; s[2]+=v['costUSD']
            if not e: continue
            i=e['input_cost_per_token']
            base=g('inputTokens')*i+g('outputTokens')*e['output_cost_per_token']+g('cacheReadInputTokens')*e.get('cache_read_input_token_cost',i)
            w5=e.get('cache_creation_input_token_cost',i); w1=e.get('cache_creation_input_token_cost_above_1hr',2*i if 'cache_creation_input_token_cost' in e else i)
            # modelUsage does not split 1-hour from 5-minute writes: a reading agrees when either prices it.
            cands=[base+g('cacheCreationInputTokens')*w5, base+g('cacheCreationInputTokens')*w1]
            ours=min(cands,key=lambda c:abs(c-v['costUSD']))
            s[3]+=ours
            if abs(ours-v['costUSD'])<=max(1e-6,1e-3*v['costUSD']): s[4]+=1
            if abs(ours-v['costUSD'])<=max(1e-6,1e-4*v['costUSD']): s[1]+=1
            elif '-v' in sys.argv: print('DIFF',m,key,ours,file=sys.stderr)
for m,(n,a,r,o,w) in sorted(stats.items()):
    print(f"{m:40} readings {n:4}  agree {a:4}  within 0.1% {w:4}  reported ${r:.4f}  snapshot ${o:.4f}" + ("" if entry(m) else "  (not in snapshot)"))
