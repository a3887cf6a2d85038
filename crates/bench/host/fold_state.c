// What a host fold (C = C + P over the host's cores, as hetblas's host fold does) achieves in the
// states a call can find C in: out of the caches, just written by one thread (a program that
// set C before its call), written by the fold's own threads, hot from a fold before, and each
// after 200 ms idle. Issue 57's `first` calls fold C as a program left it.
//   gcc -O3 -march=native -fopenmp crates/bench/host/fold_state.c -o fold_state
//   OMP_NUM_THREADS=16 ./fold_state 8158321      (n elements of C: 769 x 10609 f64 here)
// Results: docs/data/h200-2026-12-01-fold-state.txt.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <omp.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double *C,*C0,*P,*F; static size_t n, nf;
static void fold(void){
  #pragma omp parallel for schedule(static)
  for(size_t i=0;i<n;i++) C[i]=C[i]+P[i];
}
static void flush(void){
  #pragma omp parallel for schedule(static)
  for(size_t i=0;i<nf;i++) F[i]=F[i]*0.5+1.0;
}
static void workers_write(void){
  #pragma omp parallel for schedule(static)
  for(size_t i=0;i<n;i++) C[i]=C0[i];
}
int main(int argc,char**argv){
  n=(size_t)atol(argv[1]); int reps=7; nf=(size_t)2<<27; // 2 GiB flush
  C=aligned_alloc(4096,n*8);C0=aligned_alloc(4096,n*8);P=aligned_alloc(4096,n*8);F=aligned_alloc(4096,nf*8);
  #pragma omp parallel for schedule(static)
  for(size_t i=0;i<n;i++){C[i]=i%1009;C0[i]=i%1013;P[i]=i%997;}
  #pragma omp parallel for schedule(static)
  for(size_t i=0;i<nf;i++)F[i]=i%7;
  const char* names[]={"dram (caches flushed)","main thread wrote C","workers wrote C","hot (after a fold)","idle 200ms, main wrote C","idle 200ms, hot","idle 200ms, dram"};
  for(int r=0;r<7;r++){
    double t[16];
    for(int k=0;k<reps;k++){
      fold(); // warm threads
      switch(r){
        case 0: flush(); break;
        case 1: flush(); memcpy(C,C0,n*8); break;
        case 2: flush(); workers_write(); break;
        case 3: break;
        case 4: flush(); usleep(200000); memcpy(C,C0,n*8); break;
        case 5: usleep(200000); break;
        case 6: flush(); usleep(200000); break;
      }
      double t0=now(); fold(); t[k]=now()-t0;
    }
    qsort(t,reps,8,cmp);
    printf("%-28s n=%zu (%.0f MB C): median %.3f ms = %.1f GB/s of C (min %.3f, max %.3f)\n",names[r],n,n*8/1e6,t[reps/2]*1e3,n*8/t[reps/2]/1e9,t[0]*1e3,t[reps-1]*1e3);
  }
  return 0;
}
