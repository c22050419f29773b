local function f(x) return x + 1 end
local s = 0
for i = 1, 200000 do s = f(s) end
print(s)
