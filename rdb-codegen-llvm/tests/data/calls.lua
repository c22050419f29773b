local function f(x) return x + 1 end
local s = 0
for i = 1, 250000 do s = f(s) end
print(s)
