#include "common.h"
#include <mutex>
#include <stdexcept>
#include <atomic>
static std::once_flag of; static std::atomic<int> calls{0}, ok{0}, threw{0};
struct S{ int v; S(){ spin_ns(500000); if(calls++<2) throw std::runtime_error("ctor"); v=7; } };
static int get(){ static S s; return s.v; }
static std::atomic<int> ocalls{0};
static void *body(void*){
  for(int i=0;i<3;i++){
    try { std::call_once(of,[]{ spin_ns(500000); if(ocalls++<2) throw std::runtime_error("once"); }); ok++; } catch(const std::runtime_error&e){ threw++; }
    try { if(get()!=7) abort(); } catch(const std::runtime_error&){ threw++; }
  }
  return nullptr;
}
int main(){
  xinit(2,50);
  xf_fiber*f[6]; for(int i=0;i<6;i++) xf_spawn(&f[i],body,0,0);
  for(int i=0;i<6;i++) xf_join(f[i],0);
  printf("ocalls=%d ctor calls=%d ok=%d threw=%d\n",ocalls.load(),calls.load(),ok.load(),threw.load());
  xf_shutdown(); return (ocalls!=3||calls!=3||threw!=4)?1:0;
}
