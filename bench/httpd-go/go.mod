module xfiber/bench/httpd-go

go 1.21
