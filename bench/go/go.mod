module xfiber/bench/go

go 1.21
