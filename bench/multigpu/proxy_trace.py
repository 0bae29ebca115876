#!/usr/bin/env python3
# harness (throwaway, issue 56): proxy_trace.py DIR - per case folder of DIR, the host (tr.*.txt) and device (tr.*.txt.dev) timestamps
# of a build with -DFDMINI_PROXY_TRACE run with PX_TRACE=DIR/case: period, flight, k_sig wait and work, word latencies.
import glob,statistics as st,os,sys
def q(v): 
    v=[x for x in v if x==x]
    return "%6.1f/%6.1f/%6.1f"%(st.quantiles(v,n=10)[0],st.median(v),st.quantiles(v,n=10)[-1]) if len(v)>10 else '-'
for case in sorted(d for d in glob.glob(sys.argv[1] + "/*") if os.path.isdir(d)):
    H={};D={}
    for f in glob.glob(case+'/tr.*.txt'):
        rk=int(f.split('.')[-2])
        for l in open(f).read().split('\n')[1:]:
            if l.strip():
                nb,r,e,s,d,p=l.split(); H[(rk,int(nb),int(e))]=(float(s),float(d),float(p))
        for l in open(f+'.dev'):
            e,a,b,c,d=map(int,l.split()); D[(rk,e)]=(a/1e3,b/1e3,c/1e3,d/1e3)
    # offset dev-host per rank: min over e of seen_dev(e) - pub_host(e) (exchange e seen by k_sig pass e)
    off={}
    for (a,b,e),(s,d,p) in H.items():
        if (a,e) in D and e>5 and D[(a,e)][1]>0 and e<380:
            o=D[(a,e)][1]-p
            off[a]=min(off.get(a,1e30),o)
    wait=[];work=[];fin=[];pub2seen=[];done2send=[];per=[];fl=[]
    for (a,b,e),(s,d,p) in H.items():
        if e<50 or e>380: continue
        dv=D.get((a,e))
        if not dv: continue
        wait.append(dv[1]-dv[0]); work.append(dv[2]-dv[1]); fin.append(dv[3]-dv[2])
        pub2seen.append(dv[1]-off[a]-p)   # relative to min (>=0)
        nx=H.get((a,b,e+1))
        if nx: done2send.append(nx[0]-(dv[3]-off[a])); per.append(nx[0]-s)
        rb=H.get((b,a,e))
        if rb: fl.append(rb[1]-s)
    print("%-12s period %s flight %s | k_sig wait %s | seen->last %s | last->done %s | pub->seen(+c) %s | done->send(-c) %s"%(os.path.basename(case),q(per),q(fl),q(wait),q(work),q(fin),q(pub2seen),q(done2send)))
