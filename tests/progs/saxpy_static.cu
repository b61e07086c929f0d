// A plain CUDA C++ program, built by nvcc with its default static runtime (cudart_static): timewarp emulates
// the runtime as libcudart.so, so this program's runtime cannot work; timewarp must say so and why.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
    const int n = 1 << 20;
    float *x = nullptr, *y = nullptr;
    cudaError_t e = cudaMalloc(&x, n * sizeof(float));
    printf("cudaMalloc: %s\n", cudaGetErrorString(e));
    if (e != cudaSuccess) return 3;
    cudaMalloc(&y, n * sizeof(float));
    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    e = cudaDeviceSynchronize();
    printf("saxpy: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 4;
}
